package json

import (
	"slices"
	"strings"
)

// Formats enforced as patterns, in Go's syntax, matching whole strings
// (the DFA matches whole texts):
// each a subset of what the format allows, so that every string written
// is valid for a validator that asserts formats. Approximate, in that they
// refuse some valid values: date (29 February, in any year), time and
// date-time (leap seconds, lowercase t and z), email (quoted local parts,
// IP-literal domains, characters outside letters, digits and "_%+-",
// more than two dots before the @ or three after it, parts longer than
// 20 characters before it and 32 after: a subset of RFC 5321's
// addresses that validators take).
var formats = map[string]string{
	"date":      dateRe,
	"time":      timeRe,
	"date-time": dateRe + `T` + timeRe,
	"uuid":      `[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`,
	"ipv4":      octet + `\.` + octet + `\.` + octet + `\.` + octet,
	"email":     `(?:` + atom + `\.){0,2}` + atom + `@` + label + `(?:\.` + label + `){1,3}`,
	// RFC 3986 URIs without userinfo or IP literals, and hosts of
	// unreserved characters only (Go's url.Parse, which some validators
	// use, refuses a host's %-escapes of ASCII).
	"uri":           uriRe,
	"uri-reference": `(?:` + uriRe + `|(?://` + uriHost + uriPath + `|/(?:` + uriPchar + `+` + uriPath + `)?|` + uriSegNC + `+` + uriPath + `)?` + uriTail + `)`,
	// RFC 1123 names without a trailing dot (253 characters at most: the
	// string's maxLength).
	"hostname": hostLabel + `(?:\.` + hostLabel + `)*`,
	// OpenAPI's base64.
	"byte": `(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?`,
}

// anyFormats are OpenAPI's formats that constrain no string (a hint to a
// form, or the data's meaning); numFormats its formats of numbers, each
// an integer range or none (fill enforces them).
var (
	anyFormats = []string{"binary", "password"}
	numFormats = map[string][2]string{"int32": {"-2147483648", "2147483647"}, "int64": {"-9223372036854775808", "9223372036854775807"}, "float": {}, "double": {}}
)

const (
	dateRe = `[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))`
	timeRe = `(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?(?:Z|[+\-](?:[01][0-9]|2[0-3]):[0-5][0-9])`
	octet  = `(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])`
	// Short enough that every address keeps RFC 5321's limits: a local
	// part of at most 64 characters, labels of at most 63, 254 in all.
	atom  = `[A-Za-z0-9_%+\-]{1,20}`
	label = `[A-Za-z0-9](?:[A-Za-z0-9\-]{0,30}[A-Za-z0-9])?`

	uriPct    = `%[0-9A-Fa-f]{2}`
	uriPchar  = `(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|` + uriPct + `)`
	uriSegNC  = `(?:[A-Za-z0-9\-._~!$&'()*+,;=@]|` + uriPct + `)` // no colon: a relative path's first segment
	uriHost   = `[A-Za-z0-9\-._~]*(?::[0-9]*)?`
	uriPath   = `(?:/` + uriPchar + `*)*`
	uriTail   = `(?:\?(?:` + uriPchar + `|[/?])*)?(?:#(?:` + uriPchar + `|[/?])*)?`
	uriRe     = `[A-Za-z][A-Za-z0-9+.\-]*:(?://` + uriHost + uriPath + `|/(?:` + uriPchar + `+` + uriPath + `)?|` + uriPchar + `+` + uriPath + `)?` + uriTail
	hostLabel = `[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?`
)

// formatNames lists the formats enforced, for a refusal.
func formatNames() string {
	var names []string
	for name := range formats {
		names = append(names, name)
	}
	for name := range numFormats {
		names = append(names, name)
	}
	names = append(names, anyFormats...)
	slices.Sort(names)
	return strings.Join(names, ", ")
}
