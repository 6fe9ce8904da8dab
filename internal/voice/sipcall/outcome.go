package sipcall

import (
	"fmt"
	"time"
)

// Outcome classifies how a call ended, for the audit trail, the call's
// chat and whoever asked for the call.
type Outcome string

// Outcomes.
const (
	// Answered: the phone picked up and the call ran until either side
	// hung up (or the longest call allowed was reached).
	Answered Outcome = "answered"
	// NoAnswer: it rang until the ring timeout (Hestia cancelled), or the
	// network answered 408/480 (nobody picked up, the phone is off).
	NoAnswer Outcome = "no_answer"
	// Busy: 486 Busy Here or 600 Busy Everywhere.
	Busy Outcome = "busy"
	// Rejected: the phone or network refused the call (603 Decline, a
	// 403 that was not about credentials, other 4xx-6xx).
	Rejected Outcome = "rejected"
	// Unreachable: the number does not exist or cannot be routed now
	// (404, 410, 484, 485, 502, 503, 504, 604).
	Unreachable Outcome = "unreachable"
	// AuthFailed: the provider refused Hestia's credentials (REGISTER or
	// INVITE answered 401/407 again after authenticating, or 403 after a
	// challenge).
	AuthFailed Outcome = "auth_failed"
	// MediaError: the call was set up but audio could not flow: no codec
	// in common (488, an unusable SDP answer), or the phone's RTP stopped
	// or never came.
	MediaError Outcome = "media_error"
	// NetworkError: the provider could not be reached at all (DNS, a
	// refused connection, no answer to the INVITE).
	NetworkError Outcome = "network_error"
	// PINFailed: an inbound call was answered but its PIN was never
	// right (three wrong ones, none in time, or the caller hung up
	// first); it counts towards the lock-out.
	PINFailed Outcome = "pin_failed"
)

// Outcomes lists every outcome, for documentation and tests. An inbound
// call Hestia refused is rejected (603, 403) or busy (486).
func Outcomes() []Outcome {
	return []Outcome{Answered, NoAnswer, Busy, Rejected, Unreachable, AuthFailed, MediaError, NetworkError, PINFailed}
}

// Result is a finished call.
type Result struct {
	CallID string `json:"call_id"`
	ChatID string `json:"chat_id"`
	To     string `json:"to"`
	// Direction is Outbound or Inbound; From is an inbound call's number.
	Direction string  `json:"direction"`
	From      string  `json:"from,omitempty"`
	Outcome   Outcome `json:"outcome"`
	// Status is the final SIP status when one decided the outcome (486,
	// 603…), else 0.
	Status int `json:"status,omitempty"`
	// Reason says what happened in words ("Busy Here", "no RTP for 5s").
	Reason string `json:"reason,omitempty"`
	// Started is when the call was placed; Answered when it was picked up
	// (zero when it was not).
	Started  time.Time `json:"started"`
	Answered time.Time `json:"answered,omitzero"`
	// Duration is the time from answer to hang-up (zero unanswered);
	// Ringing the time from the INVITE to the answer or the give-up.
	Duration time.Duration `json:"duration_ns"`
	Ringing  time.Duration `json:"ringing_ns"`
	// Turns counts the caller's utterances that became turns.
	Turns int `json:"turns"`
	// HungUpBy is "phone", "hestia" (max duration, shutdown, media) or "".
	HungUpBy string `json:"hung_up_by,omitempty"`
	// PacketsIn and PacketsOut count RTP packets.
	PacketsIn  int64 `json:"packets_in"`
	PacketsOut int64 `json:"packets_out"`
}

// Summary is one line for the chat and the audit trail.
func (r Result) Summary() string {
	call := "Call to " + r.To
	if r.Direction == Inbound {
		call = "Call from " + r.From
	}
	switch {
	case r.Outcome == Answered:
		return fmt.Sprintf("📞 %s: answered, %s.", call, roundDuration(r.Duration))
	case r.Outcome == NoAnswer:
		return fmt.Sprintf("📞 %s: no answer (rang %s).", call, roundDuration(r.Ringing))
	case r.Outcome == MediaError && !r.Answered.IsZero():
		return fmt.Sprintf("📞 %s: the audio failed after %s (%s).", call, roundDuration(r.Duration), r.Reason)
	case r.Direction == Inbound && (r.Outcome == Rejected || r.Outcome == Busy):
		return fmt.Sprintf("📞 %s: declined with %d (%s).", call, r.Status, r.Reason)
	}
	s := fmt.Sprintf("📞 %s: %s", call, outcomeWords(r.Outcome))
	if r.Reason != "" {
		s += " (" + r.Reason + ")"
	}
	return s + "."
}

func outcomeWords(o Outcome) string {
	switch o {
	case Busy:
		return "busy"
	case Rejected:
		return "rejected"
	case Unreachable:
		return "unreachable"
	case AuthFailed:
		return "the provider refused the credentials"
	case MediaError:
		return "no audio"
	case NetworkError:
		return "the provider could not be reached"
	case PINFailed:
		return "hung up without the right PIN"
	}
	return string(o)
}

func roundDuration(d time.Duration) string { return d.Round(time.Second).String() }

// classifyStatus maps a final non-2xx answer to an INVITE (RFC 3261
// §21) to an outcome. challenged says the request had been challenged and
// carried credentials, which turns 401/403/407 into auth_failed.
func classifyStatus(code int, challenged bool) Outcome {
	switch code {
	case 401, 407:
		return AuthFailed
	case 403:
		if challenged {
			return AuthFailed
		}
		return Rejected
	case 486, 600:
		return Busy
	case 408, 480, 487:
		return NoAnswer
	case 404, 410, 484, 485, 502, 503, 504, 604:
		return Unreachable
	case 488, 606:
		return MediaError
	}
	return Rejected
}
