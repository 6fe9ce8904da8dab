// Package httpjson holds the few helpers every HTTP handler in Hestia uses:
// decode a bounded JSON body strictly, write a JSON value, write an error in
// the one error shape clients see.
package httpjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
)

// MaxBody bounds request bodies unless a handler asks for another limit.
const MaxBody = 4 << 20

// ErrorBody is the JSON shape of every error response:
// {"error":{"code":"not_found","message":"chat 12 does not exist"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inner part of ErrorBody.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Write writes v as JSON with the given status.
func Write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		slog.Debug("writing json response", "err", err)
	}
}

// Error writes the standard error body. message must be safe to show.
func Error(w http.ResponseWriter, status int, code, message string) {
	Write(w, status, ErrorBody{Error: ErrorDetail{Code: code, Message: message}})
}

// Decode reads a JSON object from r's body into v, rejecting unknown fields,
// trailing data and bodies over MaxBody. The returned error text names what
// is wrong and is safe to return to the client.
func Decode(w http.ResponseWriter, r *http.Request, v any) error {
	return DecodeLimit(w, r, v, MaxBody)
}

// DecodeLimit is Decode with an explicit body limit.
func DecodeLimit(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return fmt.Errorf("content type %q is not application/json", ct)
	}
	return decode(w, r, v, limit, true)
}

// DecodeLenient is for compatibility surfaces (the OpenAI-style /v1 routes)
// whose clients send many optional fields we do not model: unknown fields
// and the content type are ignored; size and trailing data are still checked.
func DecodeLenient(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	return decode(w, r, v, limit, false)
}

func decode(w http.ResponseWriter, r *http.Request, v any, limit int64, strict bool) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &mbe):
			return fmt.Errorf("request body is larger than %d bytes", limit)
		case errors.Is(err, io.EOF):
			return errors.New("request body is empty; a JSON object is required")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return errors.New("request body is not valid JSON (it ends early)")
		case errors.As(err, &se):
			return fmt.Errorf("request body is not valid JSON (at byte %d)", se.Offset)
		case errors.As(err, &te):
			if te.Field != "" {
				return fmt.Errorf("field %q must be %s, not %s", te.Field, te.Type, te.Value)
			}
			return fmt.Errorf("request body must be a JSON object, not %s", te.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fmt.Errorf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		default:
			return fmt.Errorf("request body is not valid JSON: %v", err)
		}
	}
	if dec.More() {
		return errors.New("request body has data after the JSON object")
	}
	return nil
}

// BadRequest writes a 400 with code bad_request.
func BadRequest(w http.ResponseWriter, err error) {
	Error(w, http.StatusBadRequest, "bad_request", err.Error())
}
