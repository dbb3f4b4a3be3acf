package mlxc

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestSymbolTableComplete checks the binding table against api: every
// function field is bound exactly once, to a distinct mlx_ name.
func TestSymbolTableComplete(t *testing.T) {
	a := new(api)
	byAddr := map[uintptr]string{}
	names := map[string]bool{}
	for _, s := range a.symbols() {
		p := reflect.ValueOf(s.fn).Pointer()
		if prev, dup := byAddr[p]; dup {
			t.Errorf("%s and %s bind the same field", prev, s.name)
		}
		byAddr[p] = s.name
		if names[s.name] || !strings.HasPrefix(s.name, "mlx_") {
			t.Errorf("symbol %q repeated or not an mlx-c name", s.name)
		}
		names[s.name] = true
	}
	v := reflect.ValueOf(a).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if f.Type.Kind() != reflect.Func {
			t.Errorf("api.%s is not a function", f.Name)
			continue
		}
		if _, ok := byAddr[v.Field(i).Addr().Pointer()]; !ok {
			t.Errorf("api.%s has no entry in symbols()", f.Name)
		}
	}
	if names[apiMarker] {
		t.Errorf("the marker %s is checked, not bound", apiMarker)
	}
}

func TestBind(t *testing.T) {
	all := func(string) (uintptr, error) { return 0x1000, nil }
	without := func(miss ...string) func(string) (uintptr, error) {
		return func(name string) (uintptr, error) {
			for _, m := range miss {
				if name == m {
					return 0, errors.New("undefined symbol: " + name)
				}
			}
			return 0x1000, nil
		}
	}
	total := len(new(api).symbols()) + 1
	for _, tc := range []struct {
		reason string
		lookup func(string) (uintptr, error)
		want   string // substring of the error; "" for success
		names  []string
	}{
		{"every symbol present binds", all, "", nil},
		{"each missing symbol is named", without("mlx_fast_rope", "mlx_slice_update"),
			"/x/libmlxc.so: missing mlx-c functions mlx_slice_update, mlx_fast_rope", []string{"mlx_slice_update", "mlx_fast_rope"}},
		{"an mlx-c older than 0.6.0 lacks the marker", without(apiMarker),
			"missing mlx-c function mlx_hanning; mlx-c 0.6.0 or newer is required", []string{apiMarker}},
		{"another library has none of them", func(string) (uintptr, error) { return 0, errors.New("no") },
			"/x/libmlxc.so is not libmlxc: none of the", nil},
	} {
		registered := 0
		err := bind(new(api), "/x/libmlxc.so", tc.lookup, func(any, uintptr) { registered++ })
		if tc.want == "" {
			if err != nil || registered != total-1 {
				t.Errorf("%s: err %v, %d registered", tc.reason, err, registered)
			}
			continue
		}
		var me *MissingSymbolsError
		if !errors.As(err, &me) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.reason, err, tc.want)
		}
		if tc.names != nil && !reflect.DeepEqual(me.Names, tc.names) {
			t.Errorf("%s: names %v, want %v", tc.reason, me.Names, tc.names)
		}
		if registered != 0 {
			t.Errorf("%s: %d functions registered despite the error", tc.reason, registered)
		}
	}
}

// TestOpenNotALibrary opens files that are not libmlxc through the real
// loader.
func TestOpenNotALibrary(t *testing.T) {
	text := t.TempDir() + "/libmlxc.so"
	os.WriteFile(text, []byte("not a library"), 0o644)
	if _, err := Open(text); err == nil || !strings.Contains(err.Error(), text) {
		t.Errorf("Open(text file) = %v, want an error naming the file", err)
	}
	if _, err := Open(t.TempDir() + "/missing.so"); err == nil {
		t.Error("Open(missing file) succeeded")
	}
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(libc); err != nil {
		t.Skipf("no %s to try as a library without mlx-c's functions", libc)
	}
	if _, err := Open(libc); err == nil || !strings.Contains(err.Error(), "is not libmlxc") {
		t.Errorf("Open(libc) = %v, want \"is not libmlxc\"", err)
	}
}
