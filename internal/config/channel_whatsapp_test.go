package config

import (
	"strings"
	"testing"
)

func TestWhatsAppDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Channels.WhatsApp
	if w.Enabled() || w.APIURL != "https://graph.facebook.com" || w.APIVersion != "v23.0" || w.MaxVoiceMB != 16 || w.TemplateLanguage != "en_US" {
		t.Errorf("defaults: %+v", w)
	}
}

const waGood = `[channels.whatsapp]
token = "EAAG-test"
phone_number_id = "106540352242922"
app_secret = "s3cret"
verify_token = "hestia-verify"
owners = ["393471234567"]
`

func TestWhatsAppValid(t *testing.T) {
	t.Parallel()
	for name, file := range map[string]string{
		"minimal":  waGood,
		"template": waGood + "template_name = \"hestia_reply\"\ntemplate_language = \"it\"\ntemplate_body_param = true\ncontacts = [\"4915112345678:chat+approve\"]\n",
		"files":    "[channels.whatsapp]\ntoken_file = \"/run/secrets/wa\"\napp_secret_file = \"/run/secrets/app\"\nverify_token_file = \"/run/secrets/verify\"\nphone_number_id = \"1\"\nowners = [\"15551234567\"]\n",
		"disabled": "[channels.whatsapp]\nowners = []\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := load(t, file, nil)
			if err != nil {
				t.Fatal(err)
			}
			if name != "disabled" && !cfg.Channels.WhatsApp.Enabled() {
				t.Error("not enabled")
			}
		})
	}
}

func TestWhatsAppSecretsMasked(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, waGood, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Masked().Channels.WhatsApp
	if m.Token != "********" || m.AppSecret != "********" || m.VerifyToken != "********" {
		t.Errorf("secrets not masked: %+v", m)
	}
}

func TestWhatsAppInvalid(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file string
		want       []string
	}{
		{"no owner", strings.Replace(waGood, `owners = ["393471234567"]`, "", 1), []string{"channels.whatsapp.owners", "serves nobody"}},
		{"plus in owner", strings.Replace(waGood, "393471234567", "+39 347 1234567", 1), []string{"channels.whatsapp.owners", "digits only"}},
		{"plus in contact", waGood + "contacts = [\"+393471234567:chat\"]\n", []string{"channels.whatsapp.contacts", "digits only"}},
		{"bad scope", waGood + "contacts = [\"393471234567:admin\"]\n", []string{"channels.whatsapp.contacts"}},
		{"no phone id", strings.Replace(waGood, `phone_number_id = "106540352242922"`, "", 1), []string{"channels.whatsapp.phone_number_id", "numeric id"}},
		{"phone number as id", strings.Replace(waGood, `"106540352242922"`, `"+1 555 0100"`, 1), []string{"channels.whatsapp.phone_number_id"}},
		{"no app secret", strings.Replace(waGood, `app_secret = "s3cret"`, "", 1), []string{"channels.whatsapp.app_secret", "signature"}},
		{"no verify token", strings.Replace(waGood, `verify_token = "hestia-verify"`, "", 1), []string{"channels.whatsapp.verify_token"}},
		{"relative token file", waGood + "token_file = \"wa.txt\"\n", []string{"channels.whatsapp.token_file", "absolute path"}},
		{"relative secret file", waGood + "app_secret_file = \"app.txt\"\n", []string{"channels.whatsapp.app_secret_file", "absolute path"}},
		{"relative verify file", waGood + "verify_token_file = \"v.txt\"\n", []string{"channels.whatsapp.verify_token_file", "absolute path"}},
		{"bad url", waGood + "api_url = \"ftp://graph\"\n", []string{"channels.whatsapp.api_url", "http(s) URL"}},
		{"bad version", waGood + "api_version = \"23\"\n", []string{"channels.whatsapp.api_version", "v23.0"}},
		{"bad template", waGood + "template_name = \"Hestia Reply\"\n", []string{"channels.whatsapp.template_name", "lowercase"}},
		{"bad language", waGood + "template_name = \"hestia\"\ntemplate_language = \"english\"\n", []string{"channels.whatsapp.template_language", "en_US"}},
		{"param without template", waGood + "template_body_param = true\n", []string{"channels.whatsapp.template_body_param", "template_name"}},
		{"voice too large", waGood + "max_voice_mb = 64\n", []string{"channels.whatsapp.max_voice_mb", "1 to 16"}},
		{"voice zero", waGood + "max_voice_mb = 0\n", []string{"channels.whatsapp.max_voice_mb"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(t, tc.file, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
