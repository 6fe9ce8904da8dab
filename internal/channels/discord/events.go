package discord

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hestia-dev/hestia/internal/channels"
)

// Gateway opcodes (https://discord.com/developers/docs/topics/opcodes-and-status-codes#gateway-gateway-opcodes).
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
)

// Gateway intents (https://discord.com/developers/docs/events/gateway#gateway-intents).
// Direct messages carry their content without the privileged
// MESSAGE_CONTENT intent, and so do guild messages that mention the bot,
// which are the only guild messages this adapter passes on; so the
// adapter never asks for a privileged intent.
const (
	intentGuildMessages  = 1 << 9
	intentDirectMessages = 1 << 12
	intents              = intentGuildMessages | intentDirectMessages
)

// Channel types (https://discord.com/developers/docs/resources/channel#channel-object-channel-types).
const channelDM = 1

// Message types that carry what a person wrote (DEFAULT and REPLY); the
// rest are system notices (joins, pins, calls).
const (
	messageDefault = 0
	messageReply   = 19
)

// Interaction types and callback types
// (https://discord.com/developers/docs/interactions/receiving-and-responding).
const (
	interactionComponent = 3
	componentButton      = 2

	callbackMessage        = 4 // CHANNEL_MESSAGE_WITH_SOURCE
	callbackDeferredUpdate = 6 // DEFERRED_UPDATE_MESSAGE
	flagEphemeral          = 1 << 6
)

// payload is one gateway message in either direction.
type payload struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d,omitempty"`
	S  *int64          `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
}

// maxGatewayMessage bounds one gateway message (READY lists guilds).
const maxGatewayMessage = 8 << 20

// parsePayload decodes a gateway frame.
func parsePayload(data []byte) (payload, error) {
	var p payload
	if err := json.Unmarshal(data, &p); err != nil {
		return payload{}, fmt.Errorf("discord gateway: frame is not a JSON payload: %w", err)
	}
	if p.Op < 0 || p.Op > 50 {
		return payload{}, fmt.Errorf("discord gateway: opcode %d out of range", p.Op)
	}
	if p.Op == opDispatch && p.T == "" {
		return payload{}, errors.New("discord gateway: dispatch without an event name")
	}
	if p.S != nil && *p.S < 0 {
		return payload{}, fmt.Errorf("discord gateway: negative sequence %d", *p.S)
	}
	return p, nil
}

// hello is the d of opcode 10.
type hello struct {
	HeartbeatInterval int64 `json:"heartbeat_interval"`
}

func parseHello(d json.RawMessage) (hello, error) {
	var h hello
	if err := json.Unmarshal(d, &h); err != nil {
		return hello{}, fmt.Errorf("discord gateway: hello: %w", err)
	}
	// Discord sends ~41 s; anything outside a sane range is refused
	// rather than heartbeating in a busy loop or never.
	if h.HeartbeatInterval < 10 || h.HeartbeatInterval > 10*60*1000 {
		return hello{}, fmt.Errorf("discord gateway: hello: heartbeat interval %d ms out of range", h.HeartbeatInterval)
	}
	return h, nil
}

// ready is the d of the READY dispatch.
type ready struct {
	SessionID        string `json:"session_id"`
	ResumeGatewayURL string `json:"resume_gateway_url"`
	User             user   `json:"user"`
	Application      struct {
		ID string `json:"id"`
	} `json:"application"`
}

func parseReady(d json.RawMessage) (ready, error) {
	var r ready
	if err := json.Unmarshal(d, &r); err != nil {
		return ready{}, fmt.Errorf("discord gateway: READY: %w", err)
	}
	if r.SessionID == "" || len(r.SessionID) > 200 {
		return ready{}, errors.New("discord gateway: READY without a session id")
	}
	if !snowflake(r.User.ID) {
		return ready{}, fmt.Errorf("discord gateway: READY: bot user id %q is not a snowflake", clip(r.User.ID, 40))
	}
	if r.Application.ID != "" && !snowflake(r.Application.ID) {
		return ready{}, fmt.Errorf("discord gateway: READY: application id %q is not a snowflake", clip(r.Application.ID, 40))
	}
	return r, nil
}

type user struct {
	ID         string `json:"id"`
	Username   string `json:"username"`
	GlobalName string `json:"global_name"`
	Bot        bool   `json:"bot"`
	System     bool   `json:"system"`
}

// name is what people see: the display name, else the user name.
func (u user) name() string {
	if u.GlobalName != "" {
		return clip(u.GlobalName, 64)
	}
	return clip(u.Username, 64)
}

type member struct {
	User *user  `json:"user"`
	Nick string `json:"nick"`
}

type attachment struct {
	ID          string  `json:"id"`
	Filename    string  `json:"filename"`
	ContentType string  `json:"content_type"`
	Size        int64   `json:"size"`
	URL         string  `json:"url"`
	Duration    float64 `json:"duration_secs"`
}

// message is a message object as MESSAGE_CREATE and the REST API carry it.
type message struct {
	ID          string       `json:"id"`
	ChannelID   string       `json:"channel_id"`
	GuildID     string       `json:"guild_id"`
	Author      *user        `json:"author"`
	Member      *member      `json:"member"`
	Content     string       `json:"content"`
	Type        int          `json:"type"`
	WebhookID   string       `json:"webhook_id"`
	Mentions    []user       `json:"mentions"`
	Attachments []attachment `json:"attachments"`
	// ReferencedMessage is the message replied to (type 19).
	ReferencedMessage *message `json:"referenced_message"`
}

// parseMessage decodes a MESSAGE_CREATE and checks every id that may go
// into a request path later.
func parseMessage(d json.RawMessage) (message, error) {
	var m message
	if err := json.Unmarshal(d, &m); err != nil {
		return message{}, fmt.Errorf("discord MESSAGE_CREATE: %w", err)
	}
	if !snowflake(m.ID) || !snowflake(m.ChannelID) {
		return message{}, fmt.Errorf("discord MESSAGE_CREATE: message %q in channel %q: ids are not snowflakes", clip(m.ID, 40), clip(m.ChannelID, 40))
	}
	if m.GuildID != "" && !snowflake(m.GuildID) {
		return message{}, fmt.Errorf("discord MESSAGE_CREATE: guild id %q is not a snowflake", clip(m.GuildID, 40))
	}
	if m.Author == nil || !snowflake(m.Author.ID) {
		return message{}, errors.New("discord MESSAGE_CREATE: no author id")
	}
	return m, nil
}

// interaction is an INTERACTION_CREATE.
type interaction struct {
	ID            string `json:"id"`
	ApplicationID string `json:"application_id"`
	Type          int    `json:"type"`
	Token         string `json:"token"`
	Data          *struct {
		CustomID      string `json:"custom_id"`
		ComponentType int    `json:"component_type"`
	} `json:"data"`
	GuildID   string `json:"guild_id"`
	ChannelID string `json:"channel_id"`
	Channel   *struct {
		ID   string `json:"id"`
		Type int    `json:"type"`
	} `json:"channel"`
	Member  *member  `json:"member"`
	User    *user    `json:"user"`
	Message *message `json:"message"`
}

// presser is who pressed: user in DMs, member.user in guilds.
func (in interaction) presser() *user {
	if in.User != nil {
		return in.User
	}
	if in.Member != nil {
		return in.Member.User
	}
	return nil
}

// parseInteraction decodes an INTERACTION_CREATE. The id and token go into
// the callback path, so both are checked before anything else is looked at.
func parseInteraction(d json.RawMessage) (interaction, error) {
	var in interaction
	if err := json.Unmarshal(d, &in); err != nil {
		return interaction{}, fmt.Errorf("discord INTERACTION_CREATE: %w", err)
	}
	if !snowflake(in.ID) {
		return interaction{}, fmt.Errorf("discord INTERACTION_CREATE: id %q is not a snowflake", clip(in.ID, 40))
	}
	if !tokenChars(in.Token) {
		return interaction{}, errors.New("discord INTERACTION_CREATE: missing or malformed interaction token")
	}
	if in.ApplicationID != "" && !snowflake(in.ApplicationID) {
		return interaction{}, fmt.Errorf("discord INTERACTION_CREATE: application id %q is not a snowflake", clip(in.ApplicationID, 40))
	}
	if in.ChannelID != "" && !snowflake(in.ChannelID) {
		return interaction{}, fmt.Errorf("discord INTERACTION_CREATE: channel id %q is not a snowflake", clip(in.ChannelID, 40))
	}
	if in.GuildID != "" && !snowflake(in.GuildID) {
		return interaction{}, fmt.Errorf("discord INTERACTION_CREATE: guild id %q is not a snowflake", clip(in.GuildID, 40))
	}
	if in.Message != nil && (!snowflake(in.Message.ID) || !snowflake(in.Message.ChannelID)) {
		return interaction{}, errors.New("discord INTERACTION_CREATE: message ids are not snowflakes")
	}
	if p := in.presser(); p != nil && !snowflake(p.ID) {
		return interaction{}, fmt.Errorf("discord INTERACTION_CREATE: user id %q is not a snowflake", clip(p.ID, 40))
	}
	return in, nil
}

// Button payloads are "a:<approval id>:<verb>"; Discord allows 100
// characters of custom_id.
const (
	customIDPrefix = "a:"
	maxCustomID    = 100
)

func customID(approvalID string, v channels.Verb) string {
	return customIDPrefix + approvalID + ":" + string(v)
}

// parseCustomID reads a button payload back.
func parseCustomID(s string) (approvalID string, v channels.Verb, ok bool) {
	if len(s) > maxCustomID || !strings.HasPrefix(s, customIDPrefix) {
		return "", "", false
	}
	rest := s[len(customIDPrefix):]
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return "", "", false
	}
	approvalID, v = rest[:i], channels.Verb(rest[i+1:])
	switch v {
	case channels.VerbApprove, channels.VerbDeny, channels.VerbAllow10m:
	default:
		return "", "", false
	}
	for _, r := range approvalID {
		if r <= ' ' || r == 0x7f {
			return "", "", false
		}
	}
	return approvalID, v, true
}

// snowflake reports whether s is a Discord id: 1–20 decimal digits.
// Every id that goes into a request path is checked with it, so a
// payload cannot steer a request to another endpoint.
func snowflake(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// tokenChars reports whether s may be an interaction token in a path.
func tokenChars(s string) bool {
	if s == "" || len(s) > 1000 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
