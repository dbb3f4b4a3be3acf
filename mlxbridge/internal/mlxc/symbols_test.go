package mlxc

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestSymbolTableComplete checks the binding table against api: every
// function field is bound exactly once, to an mlx_ name given once.
func TestSymbolTableComplete(t *testing.T) {
	a := new(api)
	byAddr := map[uintptr]string{}
	names := map[string]bool{}
	for _, s := range a.symbols() {
		for _, fn := range s.fns {
			p := reflect.ValueOf(fn).Pointer()
			if prev, dup := byAddr[p]; dup {
				t.Errorf("%s and %s bind the same field", prev, s.name)
			}
			byAddr[p] = s.name
		}
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
}

// TestEveryReleaseBinds checks, for every release in the generated table,
// that each function Driftwood binds is declared (or optional) and that
// its declaration matches the Go type of exactly one field, the C types
// mapped to Go mechanically (cTypes, goTypesOfC): a signature that changes
// in a release without a field of its own fails here, not in memory. It
// also pins MinCAPI to the oldest release that binds.
func TestEveryReleaseBinds(t *testing.T) {
	oldest := -1
	for i, r := range releases {
		var problems []string
		for _, s := range new(api).symbols() {
			c, ok := declIn(s.name, i)
			if !ok {
				if !s.optional {
					problems = append(problems, s.name+" not declared")
				}
				continue
			}
			n := 0
			for _, fn := range s.fns {
				if matches(c, reflect.TypeOf(fn).Elem()) {
					n++
				}
			}
			if n != 1 {
				problems = append(problems, fmt.Sprintf("%s matches %d fields", c, n))
			}
		}
		if len(problems) == 0 && oldest < 0 {
			oldest = i
		}
		if oldest >= 0 && len(problems) > 0 {
			t.Errorf("mlx-c %s (after %s, which binds): %s", r.name, releases[oldest].name, strings.Join(problems, "; "))
		}
		t.Logf("mlx-c %s (MLX %s): %d problems %v", r.name, r.mlx, len(problems), problems)
	}
	if oldest < 0 || releases[oldest].name != MinCAPI {
		t.Errorf("the oldest release that binds is %d, MinCAPI says %s", oldest, MinCAPI)
	}
}

// TestCTypes checks the declaration parser on the shapes the headers use.
func TestCTypes(t *testing.T) {
	for _, tc := range []struct{ reason, c, ret, params string }{
		{"by-value const handles lose const; names dropped", "int mlx_add(mlx_array* res, const mlx_array a, const mlx_array b, const mlx_stream s)",
			"int", "mlx_array*,mlx_array,mlx_array,mlx_stream"},
		{"a function pointer parameter", "void mlx_set_error_handler(mlx_error_handler_func handler, void* data, void (*dtor)(void*))",
			"void", "mlx_error_handler_func,void*,fnptr"},
		{"void parameters; a returned handle", "mlx_stream mlx_default_cpu_stream_new(void)", "mlx_stream", ""},
		{"pointer results and const pointers", "const int* mlx_array_shape(const mlx_array arr)", "const int*", "mlx_array"},
		{"an unnamed parameter", "int mlx_f(const char*, int)", "int", "const char*,int"},
	} {
		ret, params := cTypes(tc.c)
		if ret != tc.ret || strings.Join(params, ",") != tc.params {
			t.Errorf("%s: cTypes(%q) = %q, %q; want %q, %q", tc.reason, tc.c, ret, params, tc.ret, tc.params)
		}
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
	newest := Release{Name: releases[len(releases)-1].name, index: len(releases) - 1}
	v04 := Release{Name: "0.4.1", index: releaseIndex("0.4.1")}
	v02 := Release{Name: "0.2.0", index: releaseIndex("0.2.0")}
	for _, tc := range []struct {
		reason string
		rel    Release
		lookup func(string) (uintptr, error)
		want   string   // substring of the error; "" for success
		bound  []string // fields that must be set after success
		unset  []string // fields that must stay nil
	}{
		{"the newest release binds the 0.6.0 fields", newest, all, "", []string{"dequantize", "quantize", "sdpa", "deviceIsAvailable"},
			[]string{"dequantize04", "quantize04", "sdpa03", "quantizedMatmul03"}},
		{"0.4.1 binds its dequantize (no global_scale) and has no device_is_available", v04, all, "",
			[]string{"dequantize04", "dequantize", "quantize04", "quantize", "quantizedMatmul", "sdpa"}, []string{"deviceIsAvailable", "cudaIsAvailable", "dequantize03", "quantize03"}},
		{"0.2.0 binds the int group size and the mask vector", v02, all, "",
			[]string{"quantizedMatmul02", "dequantize02", "quantize02", "sdpa02", "quantizedMatmul", "dequantize", "quantize", "sdpa"}, []string{"sdpa03", "quantizedMatmul03", "quantize03"}},
		{"each missing required function is named", newest, without("mlx_fast_rope", "mlx_slice_update", "mlx_cuda_is_available"),
			"/x/libmlxc.so: missing mlx-c functions mlx_slice_update, mlx_fast_rope", nil, nil},
		{"another library has none of them", newest, func(string) (uintptr, error) { return 0, errors.New("no") },
			"/x/libmlxc.so is not libmlxc: none of the", nil, nil},
	} {
		registered := 0
		a := new(api)
		err := bind(a, "/x/libmlxc.so", tc.rel, tc.lookup, func(fptr any, _ uintptr) {
			registered++
			// Stand in for purego: any non-nil function.
			v := reflect.ValueOf(fptr).Elem()
			v.Set(reflect.MakeFunc(v.Type(), func([]reflect.Value) []reflect.Value { panic("not called") }))
		})
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.reason, err)
			}
			v := reflect.ValueOf(a).Elem()
			for _, f := range tc.bound {
				if v.FieldByName(f).IsNil() {
					t.Errorf("%s: api.%s not set", tc.reason, f)
				}
			}
			for _, f := range tc.unset {
				if !v.FieldByName(f).IsNil() {
					t.Errorf("%s: api.%s set", tc.reason, f)
				}
			}
			continue
		}
		var me *MissingSymbolsError
		if !errors.As(err, &me) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.reason, err, tc.want)
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
