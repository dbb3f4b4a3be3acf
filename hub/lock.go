package hub

import (
	"context"

	"github.com/driftwoodlabs/driftwood/internal/flock"
)

// lockFile takes an exclusive flock(2) on path, creating it, as
// huggingface_hub's WeakFileLock (the filelock package) does, so that
// Driftwood, huggingface_hub and other Driftwood processes or goroutines
// never download the same blob at once; ctx cancels the wait.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	l, err := flock.Wait(ctx, path)
	if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}
