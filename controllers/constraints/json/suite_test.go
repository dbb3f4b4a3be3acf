package json

import (
	stdjson "encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSuite runs the official JSON-Schema-Test-Suite's files in
// testdata/suite (draft 2020-12) through the grammar: for every schema
// the controller accepts, every instance the suite marks invalid must be
// impossible to write, byte by byte as the masks see it. Valid
// instances it cannot write (an undeclared property, which the
// controller refuses by default; a discriminator that is not first; a
// number of another spelling than the enum's) are counted, not failed.
func TestSuite(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "suite", "*.json"))
	optional, err2 := filepath.Glob(filepath.Join("testdata", "suite", "optional", "format", "*.json"))
	files = append(files, optional...)
	if err != nil || err2 != nil || len(files) == 0 {
		t.Fatalf("no suite files: %v %v", err, err2)
	}
	var schemas, accepted, valid, written, invalid int
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var groups []struct {
			Description string
			Schema      stdjson.RawMessage
			Tests       []struct {
				Description string
				Data        stdjson.RawMessage
				Valid       bool
			}
		}
		if err := stdjson.Unmarshal(data, &groups); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		fileAccepted := 0
		for _, gr := range groups {
			schemas++
			g := newGrammar()
			root, err := g.compileSchema(string(gr.Schema))
			if err != nil {
				continue
			}
			g.root = root
			accepted++
			fileAccepted++
			for _, tc := range gr.Tests {
				v, err := decodeOne(tc.Data)
				if err != nil {
					t.Fatalf("%s: %s: %v", file, tc.Description, err)
				}
				ok := g.acceptsFrom(root, encode(v))
				switch {
				case tc.Valid:
					valid++
					if ok {
						written++
					}
				case ok:
					t.Errorf("%s: %s / %s: the invalid instance %s can be written under %s", filepath.Base(file), gr.Description, tc.Description, tc.Data, gr.Schema)
				default:
					invalid++
				}
			}
		}
		t.Logf("%-24s %d of %d schemas accepted", strings.TrimPrefix(file, filepath.Join("testdata", "suite")+"/"), fileAccepted, len(groups))
	}
	t.Logf("%d of %d schemas accepted; %d invalid instances all impossible; %d of %d valid ones can be written", accepted, schemas, invalid, written, valid)
}
