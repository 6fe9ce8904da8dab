package voice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/events"
)

// session is one open voice conversation. Three goroutines serve it: read
// (the socket: control messages and audio through the VAD), run (owns
// every piece of state below and does all writes), and the speech workers
// (transcription and synthesis, one job at a time each, in order), which
// only compute and hand results back to run.
type session struct {
	svc    *Service
	conn   *websocket.Conn
	id     devices.Identity
	chatID string

	ctx     context.Context // ends with the session
	cancel  context.CancelFunc
	endOnce sync.Once
	code    websocket.StatusCode // the close code and reason end chose
	reason  string

	ctrlc   chan control
	vadc    chan VADEvent
	readErr chan error
	sttJobs chan sttJob
	sttc    chan sttResult
	ttsJobs chan ttsJob
	ttsc    chan ttsResult
	strict  atomic.Bool  // the VAD's strict onset, while the assistant speaks
	gen     atomic.Int64 // speech generation; a barge-in starts a new one

	// State owned by run.
	turnID     string // our latest turn
	turnOpen   bool   // it has not finished
	muted      string // a turn whose rest is not spoken (barged in)
	step       int
	split      Splitter
	deltas     bool // the turn streamed text
	approvalID string
	questionID string
	seq        int64 // last audio piece queued
	sent       int64 // last audio piece sent
	played     int64 // last piece the client finished playing
	inflight   int   // synthesis jobs of the current generation
	utterances int
	started    time.Time
	timing     *timing // the latest utterance's, until its first audio
}

type sttJob struct {
	pcm []byte
	vad VADEvent
	at  time.Time // when the VAD decided
}

type sttResult struct {
	text       string
	err        error
	job        sttJob
	start, end time.Time
}

type ttsJob struct {
	gen  int64
	seq  int64
	text string
}

type ttsResult struct {
	ttsJob
	audio      []byte
	mime       string
	err        error
	start, end time.Time
}

// timing is one utterance's way to its first audio.
type timing struct {
	speechEnd, vadEnd          time.Time
	sttStart, sttEnd           time.Time
	submitted, firstDelta      time.Time
	firstPiece                 time.Time
	ttsStart, ttsEnd, audioOut time.Time
}

func newSession(s *Service, conn *websocket.Conn, t ticket) *session {
	ctx, cancel := context.WithCancel(context.Background())
	return &session{svc: s, conn: conn, id: t.id, chatID: t.chatID, ctx: ctx, cancel: cancel,
		ctrlc: make(chan control, 8), vadc: make(chan VADEvent, 16), readErr: make(chan error, 1),
		sttJobs: make(chan sttJob, 4), sttc: make(chan sttResult, 4),
		ttsJobs: make(chan ttsJob, 64), ttsc: make(chan ttsResult, 64)}
}

// end asks the session to close with code and reason; the first call wins.
func (ss *session) end(code websocket.StatusCode, reason string) {
	ss.endOnce.Do(func() {
		ss.code, ss.reason = code, reason
		ss.cancel()
	})
}

func (ss *session) run() {
	d := ss.svc.d
	ss.started = d.Clock()
	sub := d.Bus.Subscribe(events.SubscribeOptions{ChatID: ss.chatID, Approver: canApprove(ss.id)})
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); ss.read() }()
	go func() { defer wg.Done(); ss.transcribe() }()
	go func() { defer wg.Done(); ss.synthesise() }()
	d.Audit(ss.ctx, "voice.started", ss.chatID, "voice conversation started by "+ss.who(),
		map[string]any{"device_id": ss.id.DeviceID, "device_name": ss.id.Name, "stt": d.STTPath, "tts": d.TTSPath})
	defer func() {
		sub.Close()
		ss.end(websocket.StatusNormalClosure, "")
		// Close waits for the peer's close frame, which read receives.
		_ = ss.conn.Close(ss.code, ss.reason)
		wg.Wait()
		d.Audit(context.Background(), "voice.ended", ss.chatID, "voice conversation ended",
			map[string]any{"device_id": ss.id.DeviceID, "utterances": ss.utterances,
				"seconds": int(d.Clock().Sub(ss.started).Seconds()), "reason": ss.reason})
	}()
	last := sub.Start
	revoked := time.NewTicker(5 * time.Second)
	defer revoked.Stop()
	for {
		select {
		case <-ss.ctx.Done():
			return
		case err := <-ss.readErr:
			if s := websocket.CloseStatus(err); s != -1 {
				ss.end(s, "")
			} else if ss.ctx.Err() == nil {
				d.Log.Info("voice socket read ended", "chat", ss.chatID, "err", err)
				ss.end(websocket.StatusInternalError, "")
			}
			return
		case c := <-ss.ctrlc:
			ss.control(c)
		case ev := <-ss.vadc:
			ss.vadEvent(ev)
		case r := <-ss.sttc:
			ss.transcript(r)
		case r := <-ss.ttsc:
			ss.spoken(r)
		case ev, ok := <-sub.C():
			if !ok {
				if !sub.Shed || ss.ctx.Err() != nil {
					return
				}
				// Fell behind the bus: resume from the ring so nothing of
				// the turn is lost.
				var missed []*events.Event
				sub, missed = d.Bus.Catchup(events.SubscribeOptions{ChatID: ss.chatID, After: last, Approver: canApprove(ss.id)})
				for _, ev := range missed {
					ss.event(ev)
				}
				last = sub.Start
				continue
			}
			last = ev.Seq
			ss.event(ev)
		case <-revoked.C:
			if ss.isRevoked() {
				ss.end(websocket.StatusPolicyViolation, "the device was revoked")
				return
			}
		}
	}
}

func (ss *session) who() string {
	if ss.id.Local() {
		return "the local token"
	}
	return fmt.Sprintf("device %q", ss.id.Name)
}

func (ss *session) isRevoked() bool {
	d := ss.svc.d
	return ss.id.DeviceID != "" && d.Revoked != nil && d.Revoked(ss.ctx, ss.id.DeviceID)
}

// read receives the socket's messages. It reads with a context of its own:
// cancelling the one given to Read would drop the connection without the
// close frame that tells the client why.
func (ss *session) read() {
	vad := NewVAD(ss.svc.cfg.VAD)
	hello := false
	for {
		typ, data, err := ss.conn.Read(context.Background())
		if err != nil {
			ss.readErr <- err
			return
		}
		now := ss.svc.d.Clock()
		if typ == websocket.MessageText {
			c, err := parseControl(data, hello)
			if err != nil {
				ss.refuse(err)
				return
			}
			hello = hello || c.Type == "hello"
			select {
			case ss.ctrlc <- c:
			case <-ss.ctx.Done():
				return
			}
			continue
		}
		if err := checkAudio(data, hello); err != nil {
			ss.refuse(err)
			return
		}
		vad.SetStrict(ss.strict.Load())
		for _, ev := range vad.Push(now, data) {
			if ev.Kind == VADEnd {
				ev.decidedAt = now
			}
			select {
			case ss.vadc <- ev:
			case <-ss.ctx.Done():
				return
			}
		}
	}
}

// refuse ends the session over a frame that breaks the protocol.
func (ss *session) refuse(err error) {
	code := websocket.StatusUnsupportedData
	var pe *protocolError
	if errors.As(err, &pe) && strings.HasPrefix(pe.reason, "send hello") {
		code = websocket.StatusPolicyViolation
	}
	ss.svc.d.Log.Info("voice socket closed over a bad frame", "chat", ss.chatID, "reason", err.Error())
	ss.end(code, err.Error())
	ss.readErr <- errEnded
}

// send writes a JSON message; a failed write ends the session.
func (ss *session) send(v map[string]any) {
	b, _ := json.Marshal(v)
	ss.write(websocket.MessageText, b)
}

func (ss *session) write(typ websocket.MessageType, b []byte) {
	if ss.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ss.conn.Write(ctx, typ, b); err != nil {
		ss.svc.d.Log.Info("voice socket write failed", "chat", ss.chatID, "err", err)
		ss.end(websocket.StatusGoingAway, "")
	}
}

func (ss *session) state(s string) { ss.send(map[string]any{"type": "state", "state": s}) }

func (ss *session) speaking() bool { return ss.inflight > 0 || ss.sent > ss.played }

// settle updates the VAD's strictness and tells the client what the
// session is doing once nothing else is going on.
func (ss *session) settle() {
	ss.strict.Store(ss.speaking())
	switch {
	case ss.speaking():
		ss.state("speaking")
	case ss.turnOpen:
		ss.state("thinking")
	default:
		ss.state("listening")
	}
}

func (ss *session) control(c control) {
	switch c.Type {
	case "hello":
		ss.send(map[string]any{"type": "ready", "chat_id": ss.chatID, "sample_rate": SampleRate,
			"stt": ss.svc.d.STTPath, "tts": ss.svc.d.TTSPath, "can_approve": canApprove(ss.id)})
		ss.state("listening")
	case "played":
		if c.Seq > ss.played && c.Seq <= ss.sent {
			ss.played = c.Seq
			if !ss.speaking() {
				ss.settle()
			}
		}
	case "bye":
		ss.end(websocket.StatusNormalClosure, "bye")
	}
}

func (ss *session) vadEvent(ev VADEvent) {
	switch ev.Kind {
	case VADStart:
		if ss.speaking() || ss.turnOpen {
			ss.bargeIn()
		}
		ss.state("hearing")
	case VADDropped:
		// Not speech after all: the reply that was stopped stays stopped,
		// but the rest of the turn may be spoken again.
		ss.muted = ""
		ss.settle()
	case VADEnd:
		ss.utterances++
		ss.state("transcribing")
		select {
		case ss.sttJobs <- sttJob{pcm: ev.PCM, vad: ev, at: ev.decidedAt}:
		default:
			ss.notice("Too much speech is waiting to be transcribed; that was dropped.")
		}
	}
}

// bargeIn stops playback: the client drops what it queued, synthesis of
// this generation is dropped, and the running turn's rest is not spoken
// (the utterance, once transcribed, interrupts the turn in the agent). A
// pending approval is not muted: the user is probably answering it.
func (ss *session) bargeIn() {
	ss.gen.Add(1)
	ss.inflight = 0
	ss.played = ss.sent
	if ss.turnOpen && ss.approvalID == "" && ss.questionID == "" {
		ss.muted = ss.turnID
	}
	ss.strict.Store(false)
	ss.send(map[string]any{"type": "stop"})
}

func (ss *session) transcribe() {
	d := ss.svc.d
	for {
		select {
		case <-ss.ctx.Done():
			return
		case j := <-ss.sttJobs:
			start := d.Clock()
			text, err := d.STT.Transcribe(ss.ctx, WAV(j.pcm), "voice.wav", "audio/wav")
			r := sttResult{text: strings.TrimSpace(text), err: err, job: j, start: start, end: d.Clock()}
			select {
			case ss.sttc <- r:
			case <-ss.ctx.Done():
				return
			}
		}
	}
}

// transcript acts on what was heard: an answer to the card being asked
// about, or a new message.
func (ss *session) transcript(r sttResult) {
	d := ss.svc.d
	if r.err != nil {
		d.Log.Warn("transcribing a voice utterance", "chat", ss.chatID, "err", r.err)
		ss.notice("Transcription failed: " + r.err.Error())
		ss.settle()
		return
	}
	if r.text == "" {
		ss.notice("I didn't catch that.")
		ss.settle()
		return
	}
	if ss.isRevoked() {
		ss.end(websocket.StatusPolicyViolation, "the device was revoked")
		return
	}
	ss.send(map[string]any{"type": "transcript", "text": r.text})
	if ss.questionID != "" && canApprove(ss.id) {
		id := ss.questionID
		if _, err := d.Approvals.Decide(id, approval.Decision{Outcome: approval.Answer, Answer: r.text}); err == nil {
			ss.questionID = ""
			d.Audit(ss.ctx, "voice.answer", ss.chatID, "question answered by voice", map[string]any{"approval_id": id, "device_id": ss.id.DeviceID})
			ss.settle()
			return
		}
	}
	if ss.approvalID != "" {
		if a := ParseAnswer(r.text); a != NotAnAnswer {
			ss.decide(a, r.text)
			return
		}
	}
	ss.timing = &timing{speechEnd: r.job.vad.SpeechEndAt, vadEnd: r.job.at, sttStart: r.start, sttEnd: r.end}
	turnID, err := d.Agent.Submit(ss.ctx, ss.chatID, r.text)
	if err != nil {
		d.Log.Warn("starting a voice turn", "chat", ss.chatID, "err", err)
		ss.timing = nil
		ss.say("I could not start on that: " + err.Error())
		ss.settle()
		return
	}
	ss.timing.submitted = d.Clock()
	ss.turnID, ss.turnOpen, ss.muted, ss.step, ss.deltas = turnID, true, "", 0, false
	ss.split.Flush()
	ss.settle()
}

// decide answers the pending approval by voice.
func (ss *session) decide(a Answer, heard string) {
	d := ss.svc.d
	if !canApprove(ss.id) {
		ss.say("This device cannot approve. Approve or deny in the app.")
		return
	}
	out, word := approval.Approve, "Approved."
	if a == Deny {
		out, word = approval.Deny, "Denied."
	}
	id := ss.approvalID
	if _, err := d.Approvals.Decide(id, approval.Decision{Outcome: out, Note: "by voice"}); err != nil {
		ss.notice("That approval was already decided or has expired.")
		ss.approvalID = ""
		ss.settle()
		return
	}
	ss.approvalID = ""
	d.Audit(ss.ctx, "voice.decision", ss.chatID, "approval "+string(out)+" by voice",
		map[string]any{"approval_id": id, "decision": out, "heard": truncate(heard, 80), "device_id": ss.id.DeviceID})
	ss.say(word)
	ss.settle()
}

// event handles one of the chat's events.
func (ss *session) event(ev *events.Event) {
	if ev.ChatID != ss.chatID {
		return
	}
	switch ev.Type {
	case "message.delta":
		var dl struct {
			TurnID string `json:"turn_id"`
			Step   int    `json:"step"`
			Text   string `json:"text"`
		}
		if events.Decode(ev, &dl) != nil || dl.TurnID != ss.turnID || !ss.turnOpen {
			return
		}
		if ss.timing != nil && ss.timing.firstDelta.IsZero() {
			ss.timing.firstDelta = ss.svc.d.Clock()
		}
		ss.deltas = true
		if dl.Step != ss.step {
			ss.speakPiece(ss.split.Flush())
			ss.step = dl.Step
		}
		for _, p := range ss.split.Push(dl.Text) {
			ss.speakPiece(p)
		}
	case "turn.finished":
		var f struct {
			Result struct {
				TurnID string `json:"turn_id"`
				OK     bool   `json:"ok"`
				Text   string `json:"text"`
				Error  *struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			} `json:"result"`
		}
		if events.Decode(ev, &f) != nil || f.Result.TurnID != ss.turnID || !ss.turnOpen {
			return
		}
		res := f.Result
		ss.speakPiece(ss.split.Flush())
		if res.OK && !ss.deltas {
			var sp Splitter
			for _, p := range sp.Push(res.Text) {
				ss.speakPiece(p)
			}
			ss.speakPiece(sp.Flush())
		}
		if !res.OK && res.Error != nil && res.Error.Code != "interrupted" && res.Error.Code != "cancelled" {
			ss.notice("The turn failed: " + res.Error.Message)
			ss.say("Sorry, that failed.")
		}
		ss.turnOpen = false
		ss.settle()
	case "approval.requested":
		var a struct {
			Approval approval.Request `json:"approval"`
		}
		if events.Decode(ev, &a) != nil {
			return
		}
		req := a.Approval
		if req.Kind == approval.KindQuestion {
			ss.questionID = req.ID
			text := req.Question
			if len(req.Choices) > 0 {
				text += " Choices: " + strings.Join(req.Choices, ", or ") + "."
			}
			ss.send(map[string]any{"type": "question", "id": req.ID, "text": text})
			ss.say(text)
			return
		}
		ss.approvalID = req.ID
		text := approvalPrompt(req)
		if !canApprove(ss.id) {
			text = strings.TrimSuffix(text, " Approve or deny?") + " Approve or deny it in the app."
		}
		ss.send(map[string]any{"type": "approval", "id": req.ID, "text": text})
		ss.say(text)
	case "approval.resolved":
		var r struct {
			ID       string           `json:"id"`
			Decision approval.Outcome `json:"decision"`
		}
		if events.Decode(ev, &r) != nil {
			return
		}
		if r.ID == ss.approvalID || r.ID == ss.questionID {
			ss.send(map[string]any{"type": "approval.resolved", "id": r.ID, "decision": r.Decision})
		}
		if r.ID == ss.approvalID {
			ss.approvalID = ""
		}
		if r.ID == ss.questionID {
			ss.questionID = ""
		}
	}
}

// approvalPrompt is what is read out for an approval card: the tool, what
// it would do, and the question.
func approvalPrompt(req approval.Request) string {
	what := strings.ReplaceAll(req.Tool, "_", " ")
	detail := req.Preview
	if detail == "" {
		detail = string(req.Args)
	}
	detail = Speakable(truncate(strings.Join(strings.Fields(detail), " "), 200))
	s := "I need your approval to " + what
	if detail != "" {
		s += ": " + detail
	}
	s = strings.TrimRight(s, ".") + "."
	if len(req.TaintedBy) > 0 {
		s += " Careful: this follows something untrusted I read."
	}
	return s + " Approve or deny?"
}

// speakPiece speaks one piece of a reply unless its turn was muted.
func (ss *session) speakPiece(piece string) {
	if ss.muted != "" && ss.muted == ss.turnID {
		return
	}
	ss.say(piece)
}

// say queues text for synthesis (Speakable first); without a speaker it
// is only shown, which the transcript in the chat already does.
func (ss *session) say(text string) {
	text = Speakable(text)
	if text == "" || ss.svc.d.TTS == nil {
		return
	}
	if ss.timing != nil && ss.timing.firstPiece.IsZero() {
		ss.timing.firstPiece = ss.svc.d.Clock()
	}
	ss.seq++
	select {
	case ss.ttsJobs <- ttsJob{gen: ss.gen.Load(), seq: ss.seq, text: text}:
		ss.inflight++
		ss.strict.Store(true)
	default:
		ss.svc.d.Log.Warn("voice synthesis queue full; a sentence is not spoken", "chat", ss.chatID)
	}
}

func (ss *session) notice(text string) { ss.send(map[string]any{"type": "notice", "text": text}) }

func (ss *session) synthesise() {
	d := ss.svc.d
	for {
		select {
		case <-ss.ctx.Done():
			return
		case j := <-ss.ttsJobs:
			if j.gen != ss.gen.Load() {
				continue // barged in before its turn came
			}
			r := ttsResult{ttsJob: j, start: d.Clock()}
			// A barge-in cancels the synthesis under way.
			ctx, cancel := context.WithCancel(ss.ctx)
			stop := make(chan struct{})
			go func() {
				t := time.NewTicker(20 * time.Millisecond)
				defer t.Stop()
				for {
					select {
					case <-stop:
						return
					case <-t.C:
						if ss.gen.Load() != j.gen {
							cancel()
							return
						}
					}
				}
			}()
			r.audio, r.mime, r.err = d.TTS.Speak(ctx, j.text)
			close(stop)
			cancel()
			r.end = d.Clock()
			select {
			case ss.ttsc <- r:
			case <-ss.ctx.Done():
				return
			}
		}
	}
}

// spoken sends a synthesised piece, unless a barge-in made it stale.
func (ss *session) spoken(r ttsResult) {
	d := ss.svc.d
	if r.gen != ss.gen.Load() {
		return
	}
	ss.inflight--
	if r.err != nil {
		d.Log.Warn("speaking a voice reply", "chat", ss.chatID, "err", r.err)
		ss.notice("Speaking failed: " + r.err.Error())
	} else {
		ss.write(websocket.MessageBinary, audioFrame(r.seq, r.mime, r.text, r.audio))
		// A piece that failed is never sent: speaking compares the last
		// piece sent with the last the client says it played.
		ss.sent = r.seq
		if t := ss.timing; t != nil && t.audioOut.IsZero() && !t.submitted.IsZero() {
			t.ttsStart, t.ttsEnd, t.audioOut = r.start, r.end, d.Clock()
			ss.reportTiming(t)
			ss.timing = nil
		}
	}
	ss.settle()
}

// reportTiming sends the latency split of an utterance's first audio
// (Config.Timing).
func (ss *session) reportTiming(t *timing) {
	if !ss.svc.cfg.Timing {
		return
	}
	ms := func(a, b time.Time) float64 {
		if a.IsZero() || b.IsZero() {
			return 0
		}
		return float64(b.Sub(a).Microseconds()) / 1000
	}
	ss.send(map[string]any{"type": "timing",
		"vad_ms":         ms(t.speechEnd, t.vadEnd),
		"stt_ms":         ms(t.sttStart, t.sttEnd),
		"queue_stt_ms":   ms(t.vadEnd, t.sttStart),
		"submit_ms":      ms(t.sttEnd, t.submitted),
		"first_token_ms": ms(t.submitted, t.firstDelta),
		"first_piece_ms": ms(t.firstDelta, t.firstPiece),
		"queue_tts_ms":   ms(t.firstPiece, t.ttsStart),
		"tts_ms":         ms(t.ttsStart, t.ttsEnd),
		"send_ms":        ms(t.ttsEnd, t.audioOut),
		"total_ms":       ms(t.speechEnd, t.audioOut),
	})
}
