package llm

// A looping model (a small model's "Ha ha ha …", or the same sentence over
// and over) streams until max_tokens or the deadline. The router watches
// the tail of the text and of the reasoning and ends the stream once the
// tail is one short piece repeated: FinishRepetition.

const (
	repeatKeep       = 4096 // bytes of tail kept
	repeatMaxPeriod  = 200  // longest repeating piece looked for, in bytes
	repeatMinRun     = 800  // shortest repeated tail that counts
	repeatMinCopies  = 10   // and at least this many copies of the piece
	repeatCheckEvery = 64   // bytes between checks
)

type repeatDetector struct {
	buf   []byte
	since int
}

// add appends s and reports whether the tail is now a runaway loop.
func (d *repeatDetector) add(s string) bool {
	d.buf = append(d.buf, s...)
	if len(d.buf) > 2*repeatKeep {
		d.buf = append(d.buf[:0], d.buf[len(d.buf)-repeatKeep:]...)
	}
	d.since += len(s)
	if d.since < repeatCheckEvery {
		return false
	}
	d.since = 0
	return looping(d.buf)
}

// looping reports whether b ends in at least repeatMinCopies copies of a
// piece of 1…repeatMaxPeriod bytes covering at least repeatMinRun bytes.
func looping(b []byte) bool {
	n := len(b)
	for p := 1; p <= repeatMaxPeriod; p++ {
		need := max(repeatMinRun, repeatMinCopies*p) // tail length required
		if need > n {
			return false
		}
		// The tail of length need is p-periodic when b[i] == b[i-p] for
		// every i in it past its first p bytes.
		k := 0
		for k < need-p && b[n-1-k] == b[n-1-k-p] {
			k++
		}
		if k >= need-p {
			return true
		}
	}
	return false
}
