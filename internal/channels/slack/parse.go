package slack

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hestia-dev/hestia/internal/channels"
)

// What Slack delivers, as far as the adapter reads it: the Events API's
// outer event (https://api.slack.com/apis/events-api#callback-field), the
// message and app_mention events inside it, and block_actions interaction
// payloads (https://api.slack.com/reference/interaction-payloads/block-actions).
// The same shapes arrive by Socket Mode, wrapped in an envelope.

// callback is the Events API's outer event.
type callback struct {
	Type      string          `json:"type"` // event_callback, url_verification, app_rate_limited
	Challenge string          `json:"challenge"`
	TeamID    string          `json:"team_id"`
	EventID   string          `json:"event_id"`
	Event     json.RawMessage `json:"event"`
}

// event is a message or app_mention event.
type event struct {
	Type         string `json:"type"`
	Subtype      string `json:"subtype"`
	Channel      string `json:"channel"`
	ChannelType  string `json:"channel_type"`
	User         string `json:"user"`
	BotID        string `json:"bot_id"`
	Text         string `json:"text"`
	TS           string `json:"ts"`
	ThreadTS     string `json:"thread_ts"`
	ParentUserID string `json:"parent_user_id"`
	Files        []file `json:"files"`
}

// file is a file shared on a message.
type file struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	Mimetype           string `json:"mimetype"`
	Subtype            string `json:"subtype"` // slack_audio for a voice clip
	Size               int64  `json:"size"`
	URLPrivateDownload string `json:"url_private_download"`
	URLPrivate         string `json:"url_private"`
}

// interaction is a block_actions payload.
type interaction struct {
	Type string `json:"type"`
	User struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Name     string `json:"name"`
	} `json:"user"`
	Container struct {
		Type      string `json:"type"`
		MessageTS string `json:"message_ts"`
		ChannelID string `json:"channel_id"`
		ThreadTS  string `json:"thread_ts"`
	} `json:"container"`
	Channel struct {
		ID string `json:"id"`
	} `json:"channel"`
	Message *struct {
		TS       string `json:"ts"`
		ThreadTS string `json:"thread_ts"`
	} `json:"message"`
	Actions []struct {
		ActionID string `json:"action_id"`
		BlockID  string `json:"block_id"`
		Value    string `json:"value"`
		ActionTS string `json:"action_ts"`
	} `json:"actions"`
}

// inbound is what one delivery means, before the adapter adds what needs
// the network (a display name, fetching audio, answering a press).
type inbound struct {
	u     channels.Update
	ts    string // the message's own ts (messages only), for the catch-up cursor
	audio *file
	files []file // every other file: attachments
	// press: where and to whom the press is acknowledged.
	press               bool
	ackChannel, ackUser string
	ackThread           string
}

// errMalformed marks a delivery that is not what Slack sends.
var errMalformed = errors.New("malformed Slack payload")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
}

// parseCallback decodes the Events API's outer event.
func parseCallback(body []byte) (callback, error) {
	var cb callback
	if err := json.Unmarshal(body, &cb); err != nil {
		return callback{}, malformed("event is not a JSON object: %v", err)
	}
	if cb.Type == "" {
		return callback{}, malformed("event has no type")
	}
	return cb, nil
}

// parseEvent turns an event_callback into an update; ok is false for
// events that are not for the relay (another bot's message, an edit, a
// channel message that does not address the bot).
func parseEvent(me identity, cb callback) (inbound, bool, error) {
	if len(cb.Event) == 0 {
		return inbound{}, false, malformed("event_callback %s has no event", cb.EventID)
	}
	var ev event
	if err := json.Unmarshal(cb.Event, &ev); err != nil {
		return inbound{}, false, malformed("event %s is not a message event: %v", cb.EventID, err)
	}
	return eventInbound(me, ev, cb.EventID)
}

// eventInbound is parseEvent's work on a decoded event; a catch-up hands
// it the messages it fetched as message events, so they pass the same
// checks as live ones.
func eventInbound(me identity, ev event, eventID string) (inbound, bool, error) {
	if ev.Type != "message" && ev.Type != "app_mention" {
		return inbound{}, false, nil
	}
	switch ev.Subtype {
	case "", "file_share", "thread_broadcast":
	default:
		// message_changed, message_deleted, channel_join, bot_message, …
		return inbound{}, false, nil
	}
	if ev.BotID != "" || (me.UserID != "" && ev.User == me.UserID) {
		return inbound{}, false, nil
	}
	if ev.User == "" {
		return inbound{}, false, nil
	}
	if !channelIDRe.MatchString(ev.Channel) {
		return inbound{}, false, malformed("event %s: channel %q is not a Slack channel id", eventID, ev.Channel)
	}
	if !tsRe.MatchString(ev.TS) {
		return inbound{}, false, malformed("event %s: ts %q is not a Slack timestamp", eventID, ev.TS)
	}
	if ev.ThreadTS != "" && !tsRe.MatchString(ev.ThreadTS) {
		return inbound{}, false, malformed("event %s: thread_ts %q is not a Slack timestamp", eventID, ev.ThreadTS)
	}
	private := isDM(ev.Channel, ev.ChannelType)
	var conv string
	switch {
	case private && ev.ThreadTS == "":
		conv = ev.Channel
	case private:
		conv = ev.Channel + "/" + ev.ThreadTS
	default:
		// In a channel only what addresses the bot counts: a mention, or
		// a reply in a thread the bot started. Anything else is people
		// talking among themselves.
		mentioned := ev.Type == "app_mention" || (me.UserID != "" && strings.Contains(ev.Text, "<@"+me.UserID+">"))
		inBotThread := ev.ThreadTS != "" && ev.ThreadTS != ev.TS && me.UserID != "" && ev.ParentUserID == me.UserID
		if !mentioned && !inBotThread {
			return inbound{}, false, nil
		}
		root := ev.ThreadTS
		if root == "" {
			root = ev.TS
		}
		conv = ev.Channel + "/" + root
	}
	in := inbound{ts: ev.TS, u: channels.Update{
		ID:      ev.Channel + "/" + ev.TS,
		Conv:    conv,
		Sender:  ev.User,
		Private: private,
		Text:    PlainText(ev.Text, me.UserID),
	}}
	for i := range ev.Files {
		f := &ev.Files[i]
		switch {
		case f.URLPrivateDownload == "" && f.URLPrivate == "":
			// A file Slack will not let the bot download (an external
			// link, a tombstone): nothing to fetch.
		case isAudio(f) && in.audio == nil:
			in.audio = f
		default:
			in.files = append(in.files, *f)
		}
	}
	if in.u.Text == "" && in.audio == nil && len(in.files) == 0 {
		return inbound{}, false, nil
	}
	return in, true, nil
}

// isDM reports whether a conversation is a direct message with the bot:
// channel_type says so where Slack sends it (message events); an
// app_mention carries none, and DM channel ids start with D.
func isDM(channel, channelType string) bool {
	if channelType != "" {
		return channelType == "im"
	}
	return strings.HasPrefix(channel, "D")
}

func isAudio(f *file) bool {
	return (strings.HasPrefix(f.Mimetype, "audio/") || f.Subtype == "slack_audio") && (f.URLPrivateDownload != "" || f.URLPrivate != "")
}

// parseInteraction turns a block_actions payload into an Action update;
// ok is false for other interactions and for buttons that are not an
// approval's.
func parseInteraction(body []byte) (inbound, bool, error) {
	var it interaction
	if err := json.Unmarshal(body, &it); err != nil {
		return inbound{}, false, malformed("interaction is not a JSON object: %v", err)
	}
	if it.Type != "block_actions" {
		return inbound{}, false, nil
	}
	if it.User.ID == "" {
		return inbound{}, false, malformed("block_actions without a user")
	}
	if it.Container.Type != "message" {
		// Buttons in modals or on the App Home are not the relay's.
		return inbound{}, false, nil
	}
	channel, ts := it.Container.ChannelID, it.Container.MessageTS
	if channel == "" {
		channel = it.Channel.ID
	}
	if ts == "" && it.Message != nil {
		ts = it.Message.TS
	}
	if !channelIDRe.MatchString(channel) || !tsRe.MatchString(ts) {
		return inbound{}, false, malformed("block_actions on message %q in %q: not a Slack channel id and timestamp", ts, channel)
	}
	thread := it.Container.ThreadTS
	if thread == "" && it.Message != nil {
		thread = it.Message.ThreadTS
	}
	if thread != "" && !tsRe.MatchString(thread) {
		return inbound{}, false, malformed("block_actions: thread_ts %q is not a Slack timestamp", thread)
	}
	for _, act := range it.Actions {
		verb := channels.Verb(act.ActionID)
		if verb != channels.VerbApprove && verb != channels.VerbDeny && verb != channels.VerbAllow10m {
			continue
		}
		private := isDM(channel, "")
		var conv string
		switch {
		case thread != "" && thread != ts:
			conv = channel + "/" + thread
		case private:
			conv = channel
		default:
			// In a channel the relay's conversations are threads; a
			// prompt that is no reply is its own thread's root.
			conv = channel + "/" + ts
		}
		name := it.User.Name
		if name == "" {
			name = it.User.Username
		}
		return inbound{
			u: channels.Update{
				ID:         "action/" + channel + "/" + ts + "/" + act.ActionTS + "/" + it.User.ID,
				Conv:       conv,
				Sender:     it.User.ID,
				SenderName: name,
				Private:    private,
				Action:     &channels.Action{Ref: channel + "/" + ts, ApprovalID: act.Value, Verb: verb},
			},
			press:      true,
			ackChannel: channel,
			ackUser:    it.User.ID,
			ackThread:  thread,
		}, true, nil
	}
	return inbound{}, false, nil
}
