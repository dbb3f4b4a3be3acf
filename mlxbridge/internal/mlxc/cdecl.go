package mlxc

import (
	"reflect"
	"strings"
	"sync"
	"unsafe"
)

// release is one mlx-c release whose headers were read (releases_gen.go).
type release struct {
	name, ref, commit string
	mlx               string // the MLX version the release builds against
}

// decl is a function declared by the public headers of the releases in
// mask (bit i: releases[i]), as C text.
type decl struct {
	name string
	mask uint64
	c    string
}

// declIn returns name's declaration in release i.
func declIn(name string, i int) (string, bool) {
	if i < 0 {
		return "", false
	}
	for _, d := range declsByName()[name] {
		if d.mask&(1<<i) != 0 {
			return d.c, true
		}
	}
	return "", false
}

// declsByName indexes decls by function name.
var declsByName = sync.OnceValue(func() map[string][]decl {
	m := map[string][]decl{}
	for _, d := range decls {
		m[d.name] = append(m[d.name], d)
	}
	return m
})

// namesIn lists every function release i declares.
func namesIn(i int) []string {
	var out []string
	for _, d := range decls {
		if d.mask&(1<<i) != 0 {
			out = append(out, d.name)
		}
	}
	return out
}

// known reports whether any release read declares name.
func known(name string) bool { return len(declsByName()[name]) > 0 }

// cTypes splits a declaration into its result type and its parameters'
// types (names dropped; a function pointer parameter becomes "fnptr").
func cTypes(c string) (ret string, params []string) {
	open := strings.IndexByte(c, '(')
	head := strings.TrimSpace(c[:open])
	ret = strings.TrimSpace(head[:strings.LastIndexAny(head, " *")+1])
	body := c[open+1 : strings.LastIndexByte(c, ')')]
	depth, start := 0, 0
	var raw []string
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				raw = append(raw, body[start:i])
				start = i + 1
			}
		}
	}
	raw = append(raw, body[start:])
	for _, p := range raw {
		p = strings.TrimSpace(p)
		switch {
		case p == "void" || p == "":
			continue
		case strings.Contains(p, "(*"):
			params = append(params, "fnptr")
			continue
		}
		// Drop the parameter's name: the last identifier after a space
		// or a '*'.
		if cut := strings.LastIndexAny(p, " *"); cut >= 0 && !strings.HasSuffix(p, "*") {
			p = p[:cut+1]
		}
		params = append(params, normType(p))
	}
	return normType(ret), params
}

// normType writes a C type without spaces before '*' and without the
// const of a by-value parameter, which is no part of the ABI.
func normType(t string) string {
	t = strings.TrimSpace(strings.ReplaceAll(t, " *", "*"))
	if !strings.HasSuffix(t, "*") {
		t = strings.TrimPrefix(t, "const ")
	}
	return t
}

var (
	pointerType = reflect.TypeFor[unsafe.Pointer]()
	uintptrType = reflect.TypeFor[uintptr]()
	stringType  = reflect.TypeFor[string]()
	goTypesOfC  = map[string][]reflect.Type{
		"int":                    {reflect.TypeFor[int32]()},
		"int*":                   {reflect.TypeFor[*int32]()},
		"const int*":             {reflect.TypeFor[*int32](), pointerType},
		"size_t":                 {uintptrType},
		"bool":                   {reflect.TypeFor[bool]()},
		"bool*":                  {reflect.TypeFor[*bool]()},
		"float":                  {reflect.TypeFor[float32]()},
		"const char*":            {stringType, pointerType},
		"const char**":           {reflect.TypeFor[*unsafe.Pointer]()},
		"void*":                  {uintptrType, pointerType},
		"const void*":            {pointerType},
		"float*":                 {pointerType},
		"const float*":           {pointerType},
		"fnptr":                  {uintptrType},
		"mlx_error_handler_func": {uintptrType},
		"mlx_array":              {reflect.TypeFor[cArray]()},
		"mlx_array*":             {reflect.TypeFor[*cArray]()},
		"mlx_stream":             {reflect.TypeFor[cStream]()},
		"mlx_device":             {reflect.TypeFor[cDevice]()},
		"mlx_device_info":        {reflect.TypeFor[cDeviceInfo]()},
		"mlx_device_info*":       {reflect.TypeFor[*cDeviceInfo]()},
		"mlx_string":             {reflect.TypeFor[cString]()},
		"mlx_string*":            {reflect.TypeFor[*cString]()},
		"mlx_vector_array":       {reflect.TypeFor[cVectorArray]()},
		"mlx_vector_array*":      {reflect.TypeFor[*cVectorArray]()},
		"mlx_optional_int":       {reflect.TypeFor[optionalInt]()},
		"mlx_optional_float":     {reflect.TypeFor[optionalFloat]()},
		"mlx_optional_dtype":     {reflect.TypeFor[optionalDtype]()},
		"mlx_dtype":              {reflect.TypeFor[Dtype]()},
		"mlx_device_type":        {reflect.TypeFor[DeviceType]()},
		"mlx_distributed_group":  {reflect.TypeFor[cGroup]()},
		"mlx_distributed_group*": {reflect.TypeFor[*cGroup]()},
	}
)

// matches reports whether a Go function type calls the C declaration c
// correctly: the same number of parameters and results, each of a Go
// type that stands for its C type (a C string passed as a Go string,
// which purego copies, or as a pointer; a handle struct by value).
func matches(c string, t reflect.Type) bool {
	ret, params := cTypes(c)
	if t.Kind() != reflect.Func || t.NumIn() != len(params) || t.IsVariadic() {
		return false
	}
	for i, p := range params {
		if !oneOf(goTypesOfC[p], t.In(i)) {
			return false
		}
	}
	if ret == "void" {
		return t.NumOut() == 0
	}
	if t.NumOut() != 1 {
		return false
	}
	want := goTypesOfC[ret]
	if strings.HasSuffix(ret, "*") {
		want = []reflect.Type{pointerType} // a returned pointer is read, not passed back
	}
	return oneOf(want, t.Out(0))
}

func oneOf(ts []reflect.Type, t reflect.Type) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}
