package sipcall

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/voice"
)

// conversation runs one answered call: the caller's utterances become
// turns in the call's chat, the chat's events become speech, digits decide
// approvals.
type conversation struct {
	m       *Manager
	c       *Call
	med     *media
	opening string
	log     *slog.Logger

	// Touched only by the media receive goroutine.
	up        upsampler
	wide      []byte // the upsampled packet as the detector takes it
	vad       *voice.VAD
	deafUntil time.Time      // half duplex: the line's deaf tail
	barge     *bargeDetector // nil: half duplex (Config.HalfDuplex)
	tailUntil time.Time      // full duplex: the assistant's echo may still come back
	speaking  bool           // full duplex: the assistant was speaking at the last packet

	heardc      chan hearing // what the detector heard, in order
	digits      chan rune
	transcripts chan string
	speech      chan speechItem
	gen         atomic.Int64 // bumped to discard queued speech
	work        sync.WaitGroup
	// The opening line is the point of a call (what Hestia rang to say),
	// and people answer a phone with "Hello?": the caller is not heard
	// until it has been said. openingLeft counts its pieces not yet
	// handed to the media, openingPlays that the last one was.
	openingLeft  atomic.Int32
	openingPlays atomic.Bool

	// Touched only by run.
	sent        voice.Splitter
	curTurn     string
	curStep     int
	streamed    map[string]bool
	pending     []approval.Request // approvals read out, oldest first
	question    string             // a pending question card
	decidedHere map[string]bool
	turns       int
	keys        bool // the phone sends telephone-events
	// muted are turns whose rest is not spoken: the caller took the
	// floor while they ran. muting mutes every turn heard of until the
	// caller's utterance is taken (a turn that had not streamed yet when
	// the caller began).
	muted  map[string]bool
	muting bool
}

// hearing is what the detector heard: an utterance beginning (barged:
// over the assistant, which the receive goroutine has already stopped),
// one dropped as too short to be speech, or one ended with its audio.
type hearing struct {
	kind   hearingKind
	barged bool
	pcm    []byte // hearEnd: 16 kHz PCM
}

type hearingKind int

const (
	hearStart hearingKind = iota + 1
	hearDropped
	hearEnd
)

type speechItem struct {
	text    string
	gen     int64
	opening bool // a piece of the opening line (openingLeft counts them)
}

// ending says why a conversation ended.
type ending struct {
	by       string // "phone" or "hestia"
	reason   string
	mediaErr bool
}

// listenTail is how long after the assistant stops the end of its own
// voice, echoed back by the line, may still arrive: half duplex keeps the
// line deaf for it; full duplex keeps the barge-in onset (bargein.go) for
// it instead of the detector's everyday one.
const listenTail = 300 * time.Millisecond

func newConversation(m *Manager, c *Call, med *media, opening string) *conversation {
	cv := &conversation{
		m: m, c: c, med: med, opening: opening, log: m.log.With("call", c.ID),
		vad:         voice.NewVAD(m.cfg.VAD),
		sent:        voice.Splitter{MinLen: minSentence},
		heardc:      make(chan hearing, 16),
		digits:      make(chan rune, 16),
		transcripts: make(chan string, 4),
		speech:      make(chan speechItem, 64),
		streamed:    map[string]bool{},
		decidedHere: map[string]bool{},
		muted:       map[string]bool{},
	}
	if !m.cfg.HalfDuplex {
		cv.barge = newBargeDetector()
	}
	return cv
}

// run holds the conversation until the phone hangs up (hungUp ends), the
// audio stops, or ctx ends.
func (cv *conversation) run(ctx context.Context, hungUp context.Context, a answer) ending {
	m := cv.m
	sub := m.d.Bus.Subscribe(events.SubscribeOptions{ChatID: cv.c.ChatID, Approver: true})
	defer func() { sub.Close() }()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cv.med.startMedia(a, cv.onAudio, cv.onDigit)
	mediaErr := make(chan error, 1)
	cv.work.Add(2)
	go func() {
		defer cv.work.Done()
		if err := cv.med.watch(ctx, m.cfg.RTPTimeout); err != nil {
			mediaErr <- err
		}
	}()
	go func() {
		defer cv.work.Done()
		cv.speaker(ctx)
	}()
	defer cv.work.Wait()
	defer cancel()

	cv.keys = a.DTMF >= 0
	cv.sayOpening(cv.opening)
	if !cv.keys {
		cv.log.Info("the phone accepted no telephone-events; approvals cannot be answered by keypad on this call")
	}
	if m.d.STT == nil {
		cv.say("Speech recognition is not set up, so I cannot understand what you say on this line. You can still answer approvals with the keypad.")
	}
	for _, r := range m.d.Approvals.Pending(cv.c.ChatID) {
		cv.requested(r)
	}
	last := sub.Start
	for {
		select {
		case <-ctx.Done():
			return ending{by: "hestia", reason: causeText(ctx)}
		case <-hungUp.Done():
			return ending{by: "phone", reason: "the phone hung up"}
		case err := <-mediaErr:
			return ending{by: "hestia", reason: err.Error(), mediaErr: true}
		case h := <-cv.heardc:
			switch h.kind {
			case hearStart:
				cv.floorTaken(h.barged)
			case hearDropped:
				// Not speech after all: what was stopped stays stopped,
				// the rest of the turn is spoken again (as voice mode).
				cv.muting = false
				clear(cv.muted)
			case hearEnd:
				cv.work.Add(1)
				go func() {
					defer cv.work.Done()
					cv.transcribe(ctx, h.pcm)
				}()
			}
		case text := <-cv.transcripts:
			cv.heard(ctx, text)
		case d := <-cv.digits:
			cv.digit(d)
		case ev, ok := <-sub.C():
			if !ok {
				if !sub.Shed || ctx.Err() != nil {
					return ending{by: "hestia", reason: "the daemon is shutting down"}
				}
				// Shed for falling behind: resume from the ring.
				var missed []*events.Event
				sub, missed = m.d.Bus.Catchup(events.SubscribeOptions{ChatID: cv.c.ChatID, After: last, Approver: true})
				for _, ev := range missed {
					cv.event(ev)
				}
				last = sub.Start
				continue
			}
			last = ev.Seq
			cv.event(ev)
		}
	}
}

// onAudio takes 20 ms of the caller's audio (media receive goroutine).
func (cv *conversation) onAudio(pcm []int16) {
	if cv.m.d.STT == nil {
		return
	}
	now := time.Now()
	if cv.inOpening() {
		// Not heard until the opening line has been said (and its echo
		// has faded): a "Hello?" as the phone is picked up must neither
		// cut it off nor start a turn of its own.
		cv.vad.Reset()
		cv.deafUntil, cv.tailUntil = now.Add(listenTail), now.Add(listenTail)
		if cv.barge != nil {
			cv.barge.clear()
		}
		return
	}
	if cv.barge == nil {
		cv.halfDuplex(now, pcm)
		return
	}
	cv.wide = appendPCM(cv.wide[:0], cv.up.up(pcm))
	playing := cv.med.playing()
	if playing {
		cv.tailUntil = now.Add(listenTail)
	}
	speaking := playing || now.Before(cv.tailUntil)
	fired := cv.barge.push(pcm, cv.wide, cv.med.echoLevel(now), speaking && !cv.vad.Active())
	switch {
	case cv.vad.Active():
		// The caller has the floor: what the assistant starts to say now
		// is stopped at once (their words will supersede it, and its
		// echo would keep the utterance from ending).
		if playing {
			cv.stop()
		}
		cv.speaking = false
		cv.listen(now, cv.wide, true)
	case speaking:
		if !cv.speaking {
			// What came before the assistant spoke is no pre-roll of
			// what the caller says over it (the barge-in keeps its own).
			cv.vad.Reset()
			cv.speaking = true
		}
		if fired {
			cv.stop()
			cv.speaking = false
			cv.note(hearing{kind: hearStart, barged: true})
			// The detector takes the utterance from before its start,
			// so the first syllables reach the transcriber.
			cv.listen(now, cv.barge.preRoll(), false)
		}
	default:
		cv.speaking = false
		cv.listen(now, cv.wide, true)
	}
}

// halfDuplex is onAudio with barge-in off: what the caller says while
// the assistant speaks, and for listenTail after, is ignored.
func (cv *conversation) halfDuplex(now time.Time, pcm []int16) {
	if cv.med.playing() {
		cv.deafUntil = now.Add(listenTail)
		cv.vad.Reset()
		return
	}
	if now.Before(cv.deafUntil) {
		return
	}
	cv.wide = appendPCM(cv.wide[:0], cv.up.up(pcm))
	for _, ev := range cv.vad.Push(now, cv.wide) {
		if ev.Kind == voice.VADEnd {
			cv.note(hearing{kind: hearEnd, pcm: ev.PCM})
		}
	}
}

// stop drops what the assistant is saying and has queued, from the
// receive goroutine, so the line falls silent within a packet; run
// catches up when it takes the note that follows.
func (cv *conversation) stop() {
	cv.gen.Add(1)
	cv.med.flush()
	cv.tailUntil = time.Time{}
	cv.barge.clear()
}

// listen feeds the detector and passes on what it heard (starts only
// when starts is set).
func (cv *conversation) listen(now time.Time, pcm []byte, starts bool) {
	for _, ev := range cv.vad.Push(now, pcm) {
		switch ev.Kind {
		case voice.VADStart:
			if starts {
				cv.note(hearing{kind: hearStart})
			}
		case voice.VADDropped:
			cv.note(hearing{kind: hearDropped})
		case voice.VADEnd:
			cv.note(hearing{kind: hearEnd, pcm: ev.PCM})
		}
	}
}

// note hands what was heard to run without ever blocking the receive
// goroutine.
func (cv *conversation) note(h hearing) {
	select {
	case cv.heardc <- h:
	default:
		if h.kind == hearEnd {
			cv.log.Warn("an utterance was dropped: transcriptions are falling behind")
		}
	}
}

// floorTaken acts on the caller beginning to speak with barge-in on, as
// voice mode's barge-in does: what is being said and what is queued is
// dropped (the receive goroutine already silenced the line when the
// caller spoke over the assistant), and the rest of the turn in progress
// is muted. Its words stay in the chat: the caller's utterance, once
// transcribed, is submitted and interrupts that turn in the agent, which
// keeps what it had streamed. A turn waiting on a card is not muted: the
// caller is probably answering the question, and an approval is decided
// only with the keypad or in the app (heard).
func (cv *conversation) floorTaken(barged bool) {
	cv.hush()
	if barged {
		cv.log.Info("the caller spoke over the assistant; it stopped")
	}
	if len(cv.pending) > 0 || cv.question != "" {
		return
	}
	cv.muting = true
	for id := range cv.streamed {
		cv.muted[id] = true
	}
	cv.sent.Flush() // half a sentence of the muted turn is not said with the next one
}

// onDigit takes a key press (media receive goroutine).
func (cv *conversation) onDigit(d rune) {
	select {
	case cv.digits <- d:
	default:
	}
}

// transcribe sends an utterance to the stt tier.
func (cv *conversation) transcribe(ctx context.Context, pcm []byte) {
	text, err := cv.m.d.STT.Transcribe(ctx, voice.WAV(pcm), "call.wav", "audio/wav")
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		cv.log.Warn("transcribing the caller failed", "err", err)
		cv.say("Sorry, I could not make that out.")
		text = "" // heard learns that the utterance is over
	}
	select {
	case cv.transcripts <- strings.TrimSpace(text):
	case <-ctx.Done():
	}
}

// heard handles a transcript: the answer to a pending question, or a turn.
func (cv *conversation) heard(ctx context.Context, text string) {
	// The caller's utterance is taken (or there was nothing in it):
	// turns from now on are spoken again.
	cv.muting = false
	if text == "" {
		return
	}
	if cv.question != "" {
		id := cv.question
		cv.decidedHere[id] = true
		if _, err := cv.m.d.Approvals.Decide(id, approval.Decision{Outcome: approval.Answer, Answer: text}); err == nil {
			cv.question = ""
			return
		}
		cv.question = ""
	}
	// What the caller says now supersedes what the assistant was saying
	// (the new turn interrupts the running one too).
	cv.hush()
	o := cv.c.turnOptions()
	// With barge-in the caller may speak while an approval is read out
	// or waits. Interrupting its turn would cancel the approval, and
	// speech never decides one: the words queue behind that turn, and
	// the card is read again for the keypad or the app.
	waiting := cv.barge != nil && len(cv.pending) > 0
	o.NoInterrupt = waiting
	if err := cv.m.d.Agent.Submit(ctx, cv.c.ChatID, text, o); err != nil {
		cv.log.Warn("starting a turn from the call", "err", err)
		cv.say("Sorry, I could not start on that: " + err.Error())
		return
	}
	cv.turns++
	if waiting {
		cv.say("I will come to that after this. " + cv.cardText(cv.pending[0]))
	}
}

// digit handles a key: 1 approves and 2 denies the oldest approval read
// out; 2 declines a pending question; # skips what is being said.
func (cv *conversation) digit(d rune) {
	switch d {
	case '#':
		cv.hush()
		return
	case '1', '2':
	default:
		return
	}
	var (
		id      string
		outcome approval.Outcome
	)
	switch {
	case len(cv.pending) > 0:
		id = cv.pending[0].ID
		outcome = approval.Approve
		if d == '2' {
			outcome = approval.Deny
		}
	case cv.question != "" && d == '2':
		id, outcome = cv.question, approval.Deny
	default:
		cv.say("Nothing is waiting for your approval.")
		return
	}
	cv.decidedHere[id] = true
	cv.hush()
	_, err := cv.m.d.Approvals.Decide(id, approval.Decision{Outcome: outcome, Note: "decided with the keypad on a SIP call"})
	cv.drop(id)
	switch {
	case err == nil && outcome == approval.Approve:
		cv.say("Approved.")
	case err == nil:
		cv.say("Denied.")
	case errors.Is(err, approval.ErrAlreadyDecided):
		cv.say("That was already decided.")
	case errors.Is(err, approval.ErrNotFound):
		cv.say("That request is no longer waiting.")
	default:
		cv.log.Warn("deciding an approval from the keypad", "approval", id, "err", err)
		cv.say("Sorry, that did not work.")
	}
}

// drop forgets a pending card.
func (cv *conversation) drop(id string) {
	for i, r := range cv.pending {
		if r.ID == id {
			cv.pending = append(cv.pending[:i], cv.pending[i+1:]...)
			break
		}
	}
	if cv.question == id {
		cv.question = ""
	}
}

// event handles one of the chat's events.
func (cv *conversation) event(ev *events.Event) {
	if ev.ChatID != cv.c.ChatID {
		return
	}
	switch ev.Type {
	case "message.delta":
		var d struct {
			TurnID string `json:"turn_id"`
			Step   int    `json:"step"`
			Text   string `json:"text"`
		}
		if events.Decode(ev, &d) != nil || cv.mutes(d.TurnID) {
			return
		}
		if d.TurnID != cv.curTurn || d.Step != cv.curStep {
			cv.sayAll(cv.sent.Flush())
			cv.curTurn, cv.curStep = d.TurnID, d.Step
		}
		cv.streamed[d.TurnID] = true
		cv.sayAll(cv.sent.Push(d.Text)...)
	case "turn.finished":
		var d struct {
			Result agent.Result `json:"result"`
		}
		if events.Decode(ev, &d) != nil {
			return
		}
		r := d.Result
		if cv.mutes(r.TurnID) {
			// Its text, spoken or not, is in the chat.
			delete(cv.muted, r.TurnID)
			delete(cv.streamed, r.TurnID)
			if r.TurnID == cv.curTurn {
				cv.curTurn = ""
			}
			return
		}
		if r.TurnID == cv.curTurn {
			cv.sayAll(cv.sent.Flush())
		}
		switch {
		case r.OK && !cv.streamed[r.TurnID]:
			cv.say(r.Text)
		case !r.OK && !r.Aborted && r.Error != nil:
			cv.say("Sorry, that failed: " + r.Error.Message)
		}
		delete(cv.streamed, r.TurnID)
	case "approval.requested":
		var d struct {
			Approval approval.Request `json:"approval"`
		}
		if events.Decode(ev, &d) == nil {
			cv.requested(d.Approval)
		}
	case "approval.resolved":
		var d struct {
			ID       string           `json:"id"`
			Decision approval.Outcome `json:"decision"`
		}
		if events.Decode(ev, &d) != nil {
			return
		}
		was := cv.question == d.ID
		for _, r := range cv.pending {
			was = was || r.ID == d.ID
		}
		cv.drop(d.ID)
		if was && !cv.decidedHere[d.ID] {
			switch d.Decision {
			case approval.Approve, approval.Edit:
				cv.say("That was approved elsewhere.")
			case approval.Deny, approval.Revise:
				cv.say("That was denied elsewhere.")
			case approval.Answer:
			default:
				cv.say("That request expired.")
			}
		}
	}
}

// mutes reports whether what turn says goes unspoken: the caller took
// the floor while it ran, or it is first heard of before the caller's
// utterance was taken.
func (cv *conversation) mutes(turn string) bool {
	if cv.muting {
		cv.muted[turn] = true
	}
	return cv.muted[turn]
}

// requested reads a card out.
func (cv *conversation) requested(r approval.Request) {
	for _, p := range cv.pending {
		if p.ID == r.ID {
			return
		}
	}
	if r.Kind == approval.KindQuestion {
		cv.question = r.ID
		q := r.Question
		if len(r.Choices) > 0 {
			q += " The choices are: " + strings.Join(r.Choices, ", ") + "."
		}
		skip := " Say your answer, or press 2 to skip it."
		if !cv.keys {
			skip = " Say your answer."
		}
		cv.say("A question for you: " + q + skip)
		return
	}
	cv.pending = append(cv.pending, r)
	cv.say(cv.cardText(r))
}

// cardText is what is read out for an approval card.
func (cv *conversation) cardText(r approval.Request) string {
	what := r.Preview
	if what == "" {
		what = r.Tool
	}
	if len([]rune(what)) > 240 {
		what = string([]rune(what)[:240]) + "…"
	}
	text := fmt.Sprintf("Approval needed for %s: %s.", strings.ReplaceAll(r.Tool, "_", " "), what)
	if len(r.TaintedBy) > 0 {
		text += " Careful: this was proposed after reading outside content."
	}
	if !cv.keys {
		// The phone accepted no telephone-events: no key would reach us.
		return text + " Approve or deny it in the app."
	}
	return text + " Press 1 to approve, 2 to deny."
}

// minSentence keeps very short sentences ("Ok.", "1.") with what
// follows, so each speech request carries enough to sound natural.
const minSentence = 12

// say queues text to be spoken, sentence by sentence.
func (cv *conversation) say(text string) {
	s := voice.Splitter{MinLen: minSentence}
	cv.sayAll(append(s.Push(text), s.Flush())...)
}

// sayOpening queues the opening line, during which the caller is not
// heard (inOpening).
func (cv *conversation) sayOpening(text string) {
	s := voice.Splitter{MinLen: minSentence}
	pieces := spoken(append(s.Push(text), s.Flush()))
	cv.openingLeft.Store(int32(len(pieces)))
	g := cv.gen.Load()
	for _, p := range pieces {
		select {
		case cv.speech <- speechItem{text: p, gen: g, opening: true}:
		default:
			cv.openingLeft.Add(-1)
			cv.log.Warn("speech queue full; a sentence was dropped")
		}
	}
}

// inOpening reports whether the opening line is still to be said or
// playing (media receive goroutine).
func (cv *conversation) inOpening() bool {
	if cv.openingLeft.Load() > 0 {
		return true
	}
	if cv.openingPlays.Load() {
		if cv.med.playing() {
			return true
		}
		cv.openingPlays.Store(false)
	}
	return false
}

// sayAll queues pieces of a reply, each as voice.Speakable reads it
// (Markdown marks, links and code left out); a piece with nothing to say
// is skipped.
func (cv *conversation) sayAll(pieces ...string) {
	g := cv.gen.Load()
	for _, p := range spoken(pieces) {
		select {
		case cv.speech <- speechItem{text: p, gen: g}:
		default:
			cv.log.Warn("speech queue full; a sentence was dropped")
		}
	}
}

// hush stops what is being said and what is queued.
func (cv *conversation) hush() {
	cv.gen.Add(1)
	cv.med.flush()
}

// speaker synthesises queued sentences in order while earlier ones play.
func (cv *conversation) speaker(ctx context.Context) {
	for {
		var it speechItem
		select {
		case <-ctx.Done():
			return
		case it = <-cv.speech:
		}
		cv.speak(ctx, it)
		if it.opening && cv.openingLeft.Add(-1) == 0 {
			// Played on until the media runs dry (inOpening).
			cv.openingPlays.Store(true)
		}
	}
}

// speak synthesises one queued piece and hands it to the media, unless it
// was discarded meanwhile.
func (cv *conversation) speak(ctx context.Context, it speechItem) {
	if it.gen != cv.gen.Load() {
		return
	}
	pcm, err := cv.synth(ctx, it.text)
	if err != nil {
		if ctx.Err() == nil {
			cv.log.Warn("speaking on the call failed", "err", err)
		}
		return
	}
	if it.gen == cv.gen.Load() {
		cv.med.play(pcm)
	}
}

// synth turns text into 8 kHz samples through the tts tier.
func (cv *conversation) synth(ctx context.Context, text string) ([]int16, error) {
	return cv.m.synth(ctx, text)
}

// lineAudio decodes the tts tier's audio to 8 kHz mono: WAV at any rate,
// or raw 24 kHz PCM when the endpoint sends "pcm".
func lineAudio(audio []byte, contentType string) ([]int16, error) {
	if len(audio) >= 4 && string(audio[:4]) == "RIFF" {
		pcm, info, err := parseWAV(audio)
		if err != nil {
			return nil, err
		}
		return resample(pcm, info.Rate, lineRate), nil
	}
	ct := strings.ToLower(contentType)
	if strings.Contains(ct, "pcm") || strings.Contains(ct, "l16") {
		return resample(pcmMono(audio, 1), ttsPCMRate, lineRate), nil
	}
	return nil, fmt.Errorf("the speech endpoint answered %q audio; calls need wav (or pcm)", contentType)
}

// spoken is what is said of each piece, the pieces with nothing to say
// left out.
func spoken(pieces []string) []string {
	var out []string
	for _, p := range pieces {
		if t := voice.Speakable(p); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// upsampler doubles the rate of a continuous stream by linear
// interpolation, carrying the last sample across frames so there is no
// seam every 20 ms. The line is band-limited to 3.4 kHz, far below the
// new Nyquist frequency, so interpolation's soft images matter little to
// a transcriber.
type upsampler struct {
	prev int16
}

func (u *upsampler) up(in []int16) []int16 {
	out := make([]int16, 0, 2*len(in))
	for _, s := range in {
		out = append(out, int16((int32(u.prev)+int32(s))/2), s)
		u.prev = s
	}
	return out
}
