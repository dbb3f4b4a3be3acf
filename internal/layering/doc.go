// Package layering holds the test that keeps Driftwood's imports
// pointing one way: cmd → tui → (chatopen, conversation, config) →
// controllers / sessions / hub / backends → engine → engine's own
// formats. It has no code; see layering_test.go for the ranks and
// docs/RATIONALE.md for why each boundary is where it is.
package layering
