package events

import (
	"encoding/json"
	"fmt"
)

// Decode unmarshals an event's data into v, the way a client of the SSE
// stream reads it: through the encoded envelope, so an in-process
// subscriber sees the same JSON shape whatever Go value was published.
func Decode(ev *Event, v any) error {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(ev.JSON(), &env); err != nil {
		return fmt.Errorf("decoding a %s event: %w", ev.Type, err)
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		return fmt.Errorf("decoding a %s event's data: %w", ev.Type, err)
	}
	return nil
}
