package events

import (
	"testing"
	"time"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	b := NewBus(time.Now, 0, 0)
	sub := b.Subscribe(SubscribeOptions{})
	defer sub.Close()
	type delta struct {
		TurnID string `json:"turn_id"`
		Step   int    `json:"step"`
	}
	b.Publish("message.delta", "c1", map[string]any{"turn_id": "t1", "step": 2})
	b.Publish("message.delta", "c1", []string{"not", "an", "object"})
	var d delta
	if err := Decode(<-sub.C(), &d); err != nil || d != (delta{"t1", 2}) {
		t.Fatalf("Decode = %+v, %v", d, err)
	}
	if err := Decode(<-sub.C(), &d); err == nil {
		t.Fatal("data of another shape decoded without an error")
	}
}
