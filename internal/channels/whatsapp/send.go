package whatsapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/channels"
)

// Send posts m to the person whose wa_id is conv and returns the new
// message's id (wamid…). A prompt that is still open becomes an
// interactive message with reply buttons; its ref is that message's id,
// which a press names as its context. Outside the 24-hour window the
// configured template goes instead (see outsideWindow).
//
// The Cloud API has no idempotency key: a retried Send after a cut-off
// answer posts the message again. The one repeat avoided here is a long
// prompt's text part, remembered (in memory) once posted so a retry after
// its button message failed sends only the buttons.
func (a *Adapter) Send(ctx context.Context, conv string, m channels.Outgoing) (string, error) {
	if !validRecipient(conv) {
		return "", channels.Permanent(fmt.Errorf("whatsapp: sending: %q is not a WhatsApp id", Truncate(conv, 80)))
	}
	text := Truncate(Render(m.Text), MaxText)
	if strings.TrimSpace(text) == "" {
		return "", channels.Permanent(errors.New("whatsapp: sending: the message is empty"))
	}
	if a.peers.state(conv, a.cfg.Now()) == windowClosed {
		return a.outsideWindow(ctx, conv, text, nil)
	}
	ref, err := a.sendFreeForm(ctx, conv, text, m)
	if isCode(err, codeReengagement) {
		a.peers.markClosed(conv)
		return a.outsideWindow(ctx, conv, text, err)
	}
	if err != nil {
		return "", classify(err)
	}
	return ref, nil
}

// validRecipient accepts a wa_id (digits today; kept loose for Meta's
// announced user ids) but nothing with spaces or control characters.
func validRecipient(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '/' {
			return false
		}
	}
	return true
}

func (a *Adapter) sendFreeForm(ctx context.Context, conv, text string, m channels.Outgoing) (string, error) {
	p := m.Prompt
	if p == nil || p.Closed {
		return a.api.postMessage(ctx, textMessage(conv, text, ""))
	}
	buttons, ok := promptButtons(p)
	if !ok {
		// The text already carries the request code instructions.
		a.log.Warn("whatsapp approval id too long for a button payload: sent without buttons", "approval", Truncate(p.ApprovalID, 80))
		return a.api.postMessage(ctx, textMessage(conv, text, ""))
	}
	body := text
	if utf8.RuneCountInString(text) > maxButtonBody {
		// A button message's body holds 1,024 characters: the text goes
		// on its own first, the buttons follow under a short line.
		if !a.parts.sent(m.Key) {
			if _, err := a.api.postMessage(ctx, textMessage(conv, text, "")); err != nil {
				return "", err
			}
			a.parts.mark(m.Key, a.cfg.Now())
		}
		body = promptBody(p)
	}
	ref, err := a.api.postMessage(ctx, buttonMessage(conv, body, buttons))
	if err != nil {
		return "", err
	}
	a.parts.forget(m.Key)
	a.prompts.add(ref)
	return ref, nil
}

// promptButtons are a prompt's reply buttons, each carrying the approval
// id; false when the id does not fit WhatsApp's 256-byte button id.
func promptButtons(p *channels.Prompt) ([]button, bool) {
	id := func(v channels.Verb) string { return "a:" + p.ApprovalID + ":" + string(v) }
	if p.ApprovalID == "" || len(id(channels.VerbAllow10m)) > maxButtonID {
		return nil, false
	}
	if p.Question {
		return []button{{ID: id(channels.VerbDeny), Title: "Decline to answer"}}, true
	}
	return []button{
		{ID: id(channels.VerbApprove), Title: "✅ Approve"},
		{ID: id(channels.VerbDeny), Title: "❌ Deny"},
		{ID: id(channels.VerbAllow10m), Title: "⏱ Allow 10 min"},
	}, true
}

// promptBody is the button message's line when the text went first.
func promptBody(p *channels.Prompt) string {
	code := ""
	if p.Code != "" {
		code = " " + Truncate(p.Code, 40)
	}
	if p.Question {
		return "Reply with your answer to request" + code + ", or decline:"
	}
	return "Approve request" + code + "?"
}

// outsideWindow handles a message the 24-hour rule forbids: the configured
// template goes instead (carrying the text in its {{1}} when it has one;
// a text-less template at most once per nudgeEvery, until the person
// answers), or the send fails permanently, saying so.
func (a *Adapter) outsideWindow(ctx context.Context, conv, text string, cause error) (string, error) {
	closed := func(what string) error {
		msg := fmt.Sprintf("whatsapp: the 24-hour customer service window with %s has closed (free-form messages are allowed only within 24 hours of their last message); %s", conv, what)
		if cause != nil {
			return channels.Permanent(fmt.Errorf("%s: %w", msg, cause))
		}
		return channels.Permanent(errors.New(msg))
	}
	if a.cfg.TemplateName == "" {
		return "", closed("a message template is needed to reach them now: set channels.whatsapp.template_name")
	}
	var params []string
	if a.cfg.TemplateBodyParam {
		params = []string{Truncate(oneLine(text), maxTemplateParam)}
	} else if ok, last := a.peers.nudge(conv, a.cfg.Now()); !ok {
		return "", closed(fmt.Sprintf("the template %q already asked them to write at %s, and this message cannot reach them until they do",
			a.cfg.TemplateName, last.Format(time.DateTime)))
	}
	ref, err := a.api.postMessage(ctx, templateMessage(conv, a.cfg.TemplateName, a.cfg.TemplateLanguage, params))
	if err != nil {
		if !a.cfg.TemplateBodyParam {
			a.peers.unnudge(conv)
		}
		return "", classify(fmt.Errorf("sending the template outside the 24-hour window: %w", err))
	}
	a.log.Info("whatsapp window closed: template sent instead", "to", conv, "template", a.cfg.TemplateName)
	return ref, nil
}

// ack answers a button press or reaction with a short text quoting it;
// WhatsApp has no toast. The press itself opened the window.
func (a *Adapter) ack(ctx context.Context, to, replyTo, notice string) {
	notice = strings.TrimSpace(notice)
	if notice == "" {
		return
	}
	if _, err := a.api.postMessage(ctx, textMessage(to, Truncate(Render(notice), MaxText), replyTo)); err != nil {
		a.log.Warn("whatsapp acknowledging a button press", "err", err)
	}
}

// voiceTypes are the audio types WhatsApp accepts for audio messages.
var voiceTypes = map[string]bool{"audio/ogg": true, "audio/mpeg": true, "audio/mp4": true, "audio/aac": true, "audio/amr": true}

// maxVoiceUpload is WhatsApp's limit on an audio message.
const maxVoiceUpload = 16 << 20

// SendVoice uploads audio and posts it as an audio message. Templates
// cannot carry audio: outside the window it fails permanently.
func (a *Adapter) SendVoice(ctx context.Context, conv string, audio []byte, mime string) error {
	if !validRecipient(conv) {
		return channels.Permanent(fmt.Errorf("whatsapp: sending audio: %q is not a WhatsApp id", Truncate(conv, 80)))
	}
	base, _, _ := strings.Cut(strings.ToLower(mime), ";")
	if base = strings.TrimSpace(base); !voiceTypes[base] {
		return channels.Permanent(fmt.Errorf("whatsapp: sending audio: type %q is not accepted (ogg/opus, mpeg, mp4, aac and amr are)", Truncate(mime, 60)))
	}
	if len(audio) == 0 || len(audio) > maxVoiceUpload {
		return channels.Permanent(fmt.Errorf("whatsapp: sending audio: %d bytes (1 byte to 16 MB are accepted)", len(audio)))
	}
	closed := fmt.Errorf("whatsapp: sending audio: the 24-hour customer service window with %s has closed, and templates cannot carry audio", conv)
	if a.peers.state(conv, a.cfg.Now()) == windowClosed {
		return channels.Permanent(closed)
	}
	id, err := a.api.uploadMedia(ctx, audio, mime, "reply."+audioExt(base))
	if err != nil {
		return classify(err)
	}
	_, err = a.api.postMessage(ctx, map[string]any{"to": conv, "type": "audio", "audio": map[string]string{"id": id}})
	if isCode(err, codeReengagement) {
		a.peers.markClosed(conv)
		return channels.Permanent(fmt.Errorf("%w: %w", closed, err))
	}
	return classify(err)
}

func isCode(err error, code int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == code
}

// Rate limits of the Cloud API and how long to wait after each when Meta
// names no Retry-After.
var rateLimits = map[int]time.Duration{
	130429: 2 * time.Second,  // throughput: messages per second of the number
	131056: 6 * time.Second,  // pair rate: about one message per 6 s to one person
	131048: 15 * time.Minute, // spam rate limit: too many messages blocked or flagged
	80007:  time.Minute,      // the business account's API rate limit
	4:      time.Minute,      // the app's API call limit
	17:     time.Minute,      // the user's API call limit
	613:    time.Minute,      // calls within a time window
}

// transient are codes of temporary trouble on Meta's side: retried with
// the relay's ordinary backoff.
var transient = map[int]bool{1: true, 2: true, 131000: true, 131016: true, 133004: true, 131057: true}

// classify maps an API error onto the relay's retry classes: rate limits
// to RetryAfterError, errors that will never succeed to Permanent, the
// rest (transport errors, 5xx, Meta's temporary errors) as they are.
func classify(err error) error {
	var ae *APIError
	if err == nil || !errors.As(err, &ae) {
		return err
	}
	if wait, ok := rateLimits[ae.Code]; ok || ae.Status == http.StatusTooManyRequests {
		if !ok {
			wait = 30 * time.Second
		}
		return &channels.RetryAfterError{Err: err, After: max(wait, ae.RetryAfter)}
	}
	switch {
	case ae.Code == 190:
		return channels.Permanent(fmt.Errorf("whatsapp: access token expired or invalid (error 190): generate a new one for channels.whatsapp.token: %w", err))
	case ae.Code == codeUndeliverable:
		return channels.Permanent(fmt.Errorf("whatsapp: message undeliverable (error 131026: the number is not on WhatsApp, has not accepted the latest terms, or runs an old version): %w", err))
	case ae.Code == codeReengagement:
		return channels.Permanent(fmt.Errorf("whatsapp: the 24-hour customer service window has closed; a message template is needed: %w", err))
	case transient[ae.Code], ae.Status >= 500, ae.Status == http.StatusRequestTimeout:
		return err
	case ae.Status >= 400:
		return channels.Permanent(err)
	}
	return err
}

// parts remembers which long prompts already had their text posted, so a
// retry of the button message does not post the text again. In memory:
// after a restart the text may go twice, never zero times.
type parts struct {
	mu sync.Mutex // guards m
	m  map[string]time.Time
}

const partsTTL = time.Hour

func (p *parts) sent(key string) bool {
	if key == "" {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.m[key]
	return ok
}

func (p *parts) mark(key string, now time.Time) {
	if key == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]time.Time{}
	}
	for k, t := range p.m {
		if now.Sub(t) > partsTTL {
			delete(p.m, k)
		}
	}
	p.m[key] = now
}

func (p *parts) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, key)
}

// prompts remembers the ids of the button messages sent since start (the
// newest maxPrompts), so reactions are read as approvals only on them.
type prompts struct {
	mu    sync.Mutex // guards ids and order
	ids   map[string]bool
	order []string
}

const maxPrompts = 1000

func (p *prompts) add(ref string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids == nil {
		p.ids = map[string]bool{}
	}
	if p.ids[ref] {
		return
	}
	p.ids[ref] = true
	p.order = append(p.order, ref)
	if len(p.order) > maxPrompts {
		delete(p.ids, p.order[0])
		p.order = p.order[1:]
	}
}

func (p *prompts) has(ref string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids[ref]
}
