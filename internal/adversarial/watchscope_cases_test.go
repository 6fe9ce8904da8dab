package adversarial

import "testing"

// The scope rows on their own: watch grants and a chat-scope device's card.
func TestGrantScopeCases(t *testing.T) {
	t.Parallel()
	if n := len(requireAll(t, grantScopeCases(), Options{}).Outcomes); n != 2 {
		t.Fatalf("%d scope rows ran, want 2", n)
	}
}
