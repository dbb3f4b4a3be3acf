package sdktest

import (
	"slices"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

// Replay runs b.N steps of c over the recorded replies, in a loop (each
// reply starts with Begin), and reports the p50 and p99 step times as
// the metrics "p50-ns/step" and "p99-ns/step". Call it after the replies
// were produced by the same controller, so that its caches are warm.
func Replay(b *testing.B, c sdk.Controller, replies []Reply) {
	b.Helper()
	var steps int
	for _, rep := range replies {
		steps += len(rep.Appended)
	}
	if steps == 0 {
		b.Fatal("sdktest: no steps to replay")
	}
	times := make([]time.Duration, 0, b.N)
	var r sdk.Result
	b.ResetTimer()
	for i := 0; i < b.N; {
		for _, rep := range replies {
			if err := c.Begin(nil); err != nil {
				b.Fatal(err)
			}
			for _, app := range rep.Appended {
				if i == b.N {
					break
				}
				start := time.Now()
				r.Reset()
				c.Step(app, &r)
				times = append(times, time.Since(start))
				i++
			}
		}
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns/step")
	b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds()), "p99-ns/step")
}
