package adversarial

import "testing"

// The pairing rows on their own.
func TestPairingCases(t *testing.T) {
	t.Parallel()
	if n := len(requireAll(t, pairingCases(), Options{}).Outcomes); n != 2 {
		t.Fatalf("%d pairing rows ran, want 2", n)
	}
}
