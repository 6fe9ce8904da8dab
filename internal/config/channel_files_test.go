package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestChannelFileLimits(t *testing.T) {
	t.Parallel()
	cfg := Default()
	if cfg.Channels.MaxFileMB != 25 || cfg.Channels.MaxMessageMB != 100 || len(cfg.Channels.validate()) != 0 {
		t.Fatalf("defaults %d/%d: %v", cfg.Channels.MaxFileMB, cfg.Channels.MaxMessageMB, cfg.Channels.validate())
	}
	if err := decodeFile([]byte("[channels]\nmax_file_mb = 10\nmax_message_mb = 30\n[channels.slack]\nmode = \"socket\"\n"), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Channels.MaxFileMB != 10 || cfg.Channels.MaxMessageMB != 30 || cfg.Channels.Slack.Mode != "socket" {
		t.Fatalf("decoded %+v", cfg.Channels)
	}
	for _, c := range []struct {
		file, msg int
		key       string
	}{
		{0, 100, "channels.max_file_mb"},
		{2000, 4000, "channels.max_file_mb"},
		{25, 10, "channels.max_message_mb"},
		{25, 5000, "channels.max_message_mb"},
	} {
		errs := (ChannelsConfig{MaxFileMB: c.file, MaxMessageMB: c.msg, Slack: defaultSlack(), Discord: defaultDiscord(), WhatsApp: defaultWhatsApp(),
			Matrix: defaultMatrix(), Signal: defaultSignal(), Email: defaultEmail()}).validate()
		var all []string
		for _, e := range errs {
			all = append(all, e.Error())
		}
		if len(errs) != 1 || !strings.Contains(all[0], c.key) {
			t.Errorf("%d/%d MB: %v", c.file, c.msg, all)
		}
	}
	if got := (Paths{Data: "/d"}).InboxDir(); got != filepath.Join("/d", "inbox") {
		t.Errorf("InboxDir = %q", got)
	}
}
