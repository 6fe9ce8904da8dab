package llm

import (
	"errors"
	"strings"
)

// errRepetition stops a backend's stream when its tail loops.
var errRepetition = errors.New("llm: runaway repetition")

// streamState is the router's view of one streamed attempt: it feeds the
// watchdog, watches for loops, holds back tool markup, and records whether
// anything reached the caller.
type streamState struct {
	fn        func(Event) error
	wd        *watchdog
	filter    *callFilter // nil when the request offers no tools
	textRep   repeatDetector
	reasonRep repeatDetector
	text      strings.Builder // the visible text, markup removed
	native    bool            // the backend delivered structured calls
	flushed   bool
	recovered []ToolCall
	delivered bool
	fnErr     error
}

func (s *streamState) emit(ev Event) error {
	s.delivered = true
	if err := s.fn(ev); err != nil {
		s.fnErr = err
		return err
	}
	return nil
}

func (s *streamState) handle(ev Event) error {
	switch ev.Kind {
	case EventText:
		s.wd.token()
		if s.textRep.add(ev.Text) {
			return errRepetition
		}
		out := ev.Text
		if s.filter != nil {
			out = s.filter.feed(ev.Text)
		}
		if out == "" {
			return nil
		}
		s.text.WriteString(out)
		return s.emit(Event{Kind: EventText, Text: out})
	case EventReasoning:
		s.wd.token()
		if s.reasonRep.add(ev.Text) {
			return errRepetition
		}
		return s.emit(ev)
	case EventToolCallDelta:
		s.wd.token()
		s.native = true
		return s.emit(ev)
	case EventToolCall:
		s.native = true
		if err := s.flush(); err != nil {
			return err
		}
		return s.emit(ev)
	case EventDone:
		if err := s.flush(); err != nil {
			return err
		}
		for i := range s.recovered {
			tc := s.recovered[i]
			// The delta first: clients that assemble calls from deltas
			// (the gateway) see recovered calls like native ones.
			if err := s.emit(Event{Kind: EventToolCallDelta, Index: i, ToolCall: &tc}); err != nil {
				return err
			}
			if err := s.emit(Event{Kind: EventToolCall, Index: i, ToolCall: &tc}); err != nil {
				return err
			}
		}
		if len(s.recovered) > 0 {
			ev.FinishReason = FinishToolCalls
		}
		return s.emit(ev)
	}
	return s.emit(ev)
}

// flush releases the held text at the end of the reply, keeping the calls
// recovered from it when the backend sent no structured ones.
func (s *streamState) flush() error {
	if s.flushed || s.filter == nil {
		return nil
	}
	s.flushed = true
	raw := s.filter.pending
	tail, calls := s.filter.finish()
	if s.native && len(calls) > 0 {
		tail, calls = raw, nil // structured calls win; show the text as written
	}
	s.recovered = calls
	if tail == "" {
		return nil
	}
	s.text.WriteString(tail)
	return s.emit(Event{Kind: EventText, Text: tail})
}

// finish fixes up the backend's response after the stream: the visible
// text without markup, recovered calls, and a loop stopped on purpose.
func (s *streamState) finish(resp Response, err error) (Response, error) {
	if errors.Is(err, errRepetition) {
		if ferr := s.flush(); ferr != nil {
			return resp, ferr
		}
		resp.Text = s.text.String()
		resp.ToolCalls = nil
		resp.FinishReason = FinishRepetition
		u := resp.Usage
		if e := s.emit(Event{Kind: EventDone, FinishReason: FinishRepetition, Usage: &u}); e != nil {
			return resp, e
		}
		return resp, nil
	}
	if s.filter == nil {
		return resp, err
	}
	if err != nil && !s.flushed {
		// A failed stream still returns what the user saw.
		s.flushed = true
		tail, _ := s.filter.finish()
		s.text.WriteString(tail)
	}
	resp.Text = s.text.String()
	if len(resp.ToolCalls) == 0 && len(s.recovered) > 0 {
		resp.ToolCalls = s.recovered
		resp.FinishReason = FinishToolCalls
	}
	return resp, err
}

// recoverComplete applies tool-call recovery to a non-streamed reply.
func recoverComplete(resp *Response, f *callFilter) {
	if f == nil || len(resp.ToolCalls) > 0 {
		return
	}
	shown := f.feed(resp.Text)
	tail, calls := f.finish()
	if len(calls) == 0 {
		return
	}
	resp.Text = shown + tail
	resp.ToolCalls = calls
	resp.FinishReason = FinishToolCalls
}
