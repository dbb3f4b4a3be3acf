package sessions

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
)

// TestReadsEveryVersion opens a checked-in session of every format
// version this code accepts (testdata/v1.safetensors was written by the
// version-1 code before the stored structs were separated from the
// engine's), so that a change to a Go type cannot silently break the
// sessions users have saved.
func TestReadsEveryVersion(t *testing.T) {
	snap, err := Open("testdata/v1.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	m := snap.Meta
	want := engine.SamplerConfig{Temperature: 0.7, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1, RepeatLastN: 32, Seed: 42}
	switch {
	case m.Version != 1 || m.Model != "tiny" || m.ModelFingerprint != "fp" || m.TokenizerFingerprint != "tok":
		t.Errorf("header %+v", m)
	case !m.Created.Equal(time.Unix(1, 0)) || !m.Updated.Equal(time.Unix(2, 0)):
		t.Errorf("times %v %v", m.Created, m.Updated)
	case !slices.Equal(m.Tokens, []int32{0, 1, 2}) || len(m.Messages) != 2 || m.Messages[1].Content != "hello":
		t.Errorf("tokens %v, messages %+v", m.Tokens, m.Messages)
	case m.Sampler.Config() != want:
		t.Errorf("sampler %+v, want %+v", m.Sampler.Config(), want)
	case m.Controller == nil || m.Controller.Name != "regex" || m.Controller.Arg != "a+" || string(m.Controller.KV["k"]) != "v":
		t.Errorf("controller %+v", m.Controller)
	case m.EnableThinking != nil:
		t.Errorf("thinking switch %v in a file that has none", *m.EnableThinking)
	case snap.KV.Len != 3 || len(snap.KV.K) != 3 || snap.KV.K[0][0] != 5:
		t.Errorf("KV %d positions, %d layers", snap.KV.Len, len(snap.KV.K))
	}
}

// TestSamplingKeepsEverySetting: every field of engine.SamplerConfig
// survives the stored form, so a setting added to the engine fails here
// until the session format stores it.
func TestSamplingKeepsEverySetting(t *testing.T) {
	var c engine.SamplerConfig
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.5)
		case reflect.Int:
			f.SetInt(int64(i) + 1)
		case reflect.Uint64:
			f.SetUint(uint64(i) + 1)
		default:
			t.Fatalf("SamplerConfig.%s is a %s: store it in Sampling", v.Type().Field(i).Name, f.Kind())
		}
	}
	if got := SamplingOf(c).Config(); got != c {
		t.Errorf("stored and read back %+v, want %+v", got, c)
	}
}
