package signal

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
)

// sendResult is signal-cli's answer to send: the message's timestamp
// (its identity, used to edit and react to it) and one result per
// recipient device group.
type sendResult struct {
	Timestamp int64             `json:"timestamp"`
	Results   []recipientResult `json:"results"`
}

type recipientResult struct {
	RecipientAddress struct {
		UUID   string `json:"uuid"`
		Number string `json:"number"`
	} `json:"recipientAddress"`
	Type              string `json:"type"`
	Token             string `json:"token"` // a proof-required (captcha) challenge
	RetryAfterSeconds *int64 `json:"retryAfterSeconds"`
}

// Result types of JsonSendMessageResult.
const (
	resultSuccess        = "SUCCESS"
	resultNetwork        = "NETWORK_FAILURE"
	resultUnregistered   = "UNREGISTERED_FAILURE"
	resultIdentity       = "IDENTITY_FAILURE"
	resultRateLimit      = "RATE_LIMIT_FAILURE"
	resultInvalidPreKey  = "INVALID_PRE_KEY_FAILURE"
	defaultRateLimitWait = time.Minute
)

func (r sendResult) has(typ string) bool {
	for _, x := range r.Results {
		if x.Type == typ {
			return true
		}
	}
	return false
}

// retryAfter is the longest wait a result asks for, else def.
func (r sendResult) retryAfter(def time.Duration) time.Duration {
	var most time.Duration
	for _, x := range r.Results {
		if x.RetryAfterSeconds != nil && *x.RetryAfterSeconds > 0 {
			most = max(most, time.Duration(min(*x.RetryAfterSeconds, 86400))*time.Second)
		}
	}
	if most == 0 {
		return def
	}
	return most
}

// failure explains a send none of whose recipients got the message
// (nil when one did, or when there are no results to judge by: older
// signal-cli versions answer success with failed results, newer ones
// answer an error carrying them).
func (r sendResult) failure(cause error) error {
	if len(r.Results) == 0 || r.has(resultSuccess) {
		return nil
	}
	if cause == nil {
		cause = fmt.Errorf("signal-cli send: no recipient got the message (%s)", r.types())
	}
	proof := false
	for _, x := range r.Results {
		proof = proof || x.Token != ""
	}
	switch {
	case proof:
		return &channels.RetryAfterError{After: r.retryAfter(defaultRateLimitWait),
			Err: fmt.Errorf("the Signal server asks this account to solve a captcha before it sends more (signal-cli submitRateLimitChallenge): %w", cause)}
	case r.has(resultRateLimit):
		return &channels.RetryAfterError{After: r.retryAfter(defaultRateLimitWait), Err: fmt.Errorf("the Signal server rate-limits this account: %w", cause)}
	case r.has(resultNetwork), r.has(resultInvalidPreKey):
		return fmt.Errorf("signal-cli could not reach Signal for the recipient: %w", cause)
	case r.has(resultIdentity):
		return fmt.Errorf("the recipient's safety number changed; verify it and run signal-cli trust, then it is sent: %w", cause)
	default: // every recipient unregistered
		return channels.Permanent(fmt.Errorf("the recipient is not registered on Signal: %w", cause))
	}
}

func (r sendResult) types() string {
	var t []string
	for _, x := range r.Results {
		t = append(t, x.Type)
	}
	return strings.Join(t, ", ")
}

// classify maps a failed call to what the relay should do with it:
// retry later (rate limits, with the wait), never (a recipient that does
// not exist, a request signal-cli refuses), or soon (everything else).
func classify(err error) error {
	var re *RPCError
	if !errors.As(err, &re) {
		return err // connection trouble: retried
	}
	var data struct {
		Response sendResult `json:"response"`
	}
	if len(re.Data) > 0 {
		_ = json.Unmarshal(re.Data, &data) // best effort: the code decides otherwise
	}
	msg := strings.ToLower(re.Message)
	switch {
	case re.Code == codeRateLimit, strings.Contains(msg, "rate limit"), strings.Contains(msg, "ratelimit"), strings.Contains(msg, "[429]"):
		return &channels.RetryAfterError{After: data.Response.retryAfter(defaultRateLimitWait), Err: err}
	case data.Response.failure(err) != nil:
		return data.Response.failure(err)
	case re.Code == codeUntrustedKey:
		return fmt.Errorf("the recipient's safety number changed; verify it and run signal-cli trust, then it is sent: %w", err)
	case re.Code == codeMethodNotFound:
		return channels.Permanent(fmt.Errorf("this signal-cli does not know %s (too old?): %w", re.Method, err))
	case re.Code == codeInvalidRequest, re.Code == codeInvalidParams, re.Code == codeParse:
		return channels.Permanent(err)
	case re.Code == codeUserError:
		// Not registered, not a member of the group, an invalid
		// recipient or style: asking again changes nothing.
		return channels.Permanent(err)
	default: // IO errors, internal errors: a restart or the network
		return err
	}
}
