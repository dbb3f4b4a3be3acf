package json

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// maxRefHops bounds a chain of $refs that lead to $refs.
const maxRefHops = 64

// ref compiles a reference within the document (a JSON pointer, as
// "#/$defs/Name" or "#/properties/a~1b/items"), once: a recursive
// reference finds the node being built. A chain of $refs is followed;
// one that comes back to itself with no object or array in between
// (no value could ever be finished) is refused.
func (c *compiler) ref(ref any, at string) (int32, error) {
	name, ok := ref.(string)
	if !ok {
		return 0, fmt.Errorf("schema %s: $ref must be a string", at)
	}
	target, key, err := c.resolve(name)
	if err != nil {
		return 0, fmt.Errorf("schema %s: $ref %q: %w", at, name, err)
	}
	if idx, ok := c.refs[key]; ok {
		return idx, nil
	}
	idx := int32(len(c.g.nodes))
	c.refs[key] = idx
	c.g.nodes = append(c.g.nodes, node{pending: true})
	sub, err := c.schema(target, key)
	if err != nil {
		return 0, err
	}
	if c.g.nodes[sub].pending {
		return 0, fmt.Errorf("schema %s: $ref %q leads back to itself with no object or array in between", at, name)
	}
	c.g.nodes[idx] = c.g.nodes[sub]
	return idx, nil
}

// resolve finds the schema a $ref points at, and the pointer's canonical
// form: "#" and a JSON pointer after it, percent-decoded, with ~1 for /
// and ~0 for ~ in its segments, through objects and arrays alike.
// References to other documents, and to anchors, are refused.
func (c *compiler) resolve(ref string) (any, string, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, "", errors.New("only references within the schema (starting with #) are supported")
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil, "", err
	}
	if frag == "" {
		return c.root, "#", nil
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, "", errors.New("anchors are not supported, only JSON pointers")
	}
	cur := c.root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			cur, ok = v[tok]
		case []any:
			var i int
			i, err = strconv.Atoi(tok)
			ok = err == nil && i >= 0 && i < len(v) && strconv.Itoa(i) == tok
			if ok {
				cur = v[i]
			}
		default:
			ok = false
		}
		if !ok {
			return nil, "", fmt.Errorf("nothing at %q", tok)
		}
	}
	return cur, "#" + frag, nil
}
