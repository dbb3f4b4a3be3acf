package tui

import (
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/hub"
)

// TestReportProgress turns the hub's reports into messages, dropping
// those the program has no room for.
func TestReportProgress(t *testing.T) {
	ch := make(chan progressReportedMsg, 1)
	on := reportProgress(ch)
	on(hub.ProgressReport{Repo: "org/m", Files: 3, Done: 1_200_000_000, Total: 2_500_000_000, Rate: 20e6})
	on(hub.ProgressReport{Repo: "org/m", Done: 1_300_000_000, Total: 2_500_000_000}) // dropped: the channel is full
	close(ch)
	var got []progressReportedMsg
	for m := range ch {
		got = append(got, m)
	}
	if len(got) != 1 || got[0].percent != 0.48 || !strings.HasPrefix(got[0].line, "org/m  1.2 GB / 2.5 GB   48%") {
		t.Errorf("reports %+v", got)
	}
}
