package json

import (
	"fmt"
	"slices"
)

// properties compiles properties, required and additionalProperties.
// Undeclared properties are refused when "properties" is given and
// additionalProperties is not (a stricter default than JSON Schema's).
func (c *compiler) properties(n *node, s map[string]any, at string) error {
	props, _ := s["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	var required []string
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			name, ok := r.(string)
			if !ok {
				return fmt.Errorf("schema %s: required must list strings", at)
			}
			required = append(required, name)
			if _, ok := props[name]; !ok && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	deps, err := dependencies(s, at)
	if err != nil {
		return err
	}
	for name, list := range deps {
		for _, r := range append([]string{name}, list...) {
			if _, ok := props[r]; !ok && !slices.Contains(names, r) {
				names = append(names, r)
			}
		}
	}
	var conflicts [][]string
	if ns, ok := s["not"]; ok {
		if _, isTypes, _ := typesOnly(ns, at); !isTypes {
			conflicts, _, _ = presence(ns)
		}
	}
	groups, _ := s[presenceKey].([]presenceGroup)
	var sets [][]string
	for _, g := range groups {
		for i, b := range g.branches {
			sets = append(sets, b...)
			if !g.one {
				continue
			}
			for _, later := range g.branches[i+1:] { // two branches passing
				for _, x := range b {
					for _, y := range later {
						conflicts = append(conflicts, append(slices.Clone(x), y...))
					}
				}
			}
		}
	}
	if len(groups) > 1 || len(sets) > maxConflicts || len(conflicts) > maxConflicts {
		return fmt.Errorf("schema %s: more than one anyOf or oneOf of required properties, or more than %d ways to pass them, is not enforced", at, maxConflicts)
	}
	for _, t := range append(slices.Clone(conflicts), sets...) {
		for _, r := range t {
			if _, ok := props[r]; !ok && !slices.Contains(names, r) {
				names = append(names, r)
			}
		}
	}
	if len(names) > maxProps {
		return fmt.Errorf("schema %s: more than %d properties", at, maxProps)
	}
	// forbidden: JSON Schema refuses undeclared properties (not only the
	// controller's default), so a required one cannot come.
	forbidden := false
	switch extra := s["additionalProperties"].(type) {
	case nil:
		if props != nil {
			n.extra = -1
		}
	case bool:
		if !extra {
			n.extra, forbidden = -1, true
		}
	default:
		var err error
		if n.extra, err = c.schema(extra, at+"/additionalProperties"); err != nil {
			return err
		}
	}
	if len(names) == 0 {
		if err := c.compilePatternProps(n, s, props, at); err != nil {
			return err
		}
		return c.objectRules(n, s, deps, conflicts, sets, at)
	}
	n.keys = c.g.lits.newNode()
	if len(names) > 64 {
		n.wide = newWide(len(names))
	}
	for i, name := range names {
		sub, ok := props[name]
		idx := int32(anyNode)
		if ok {
			var err error
			if idx, err = c.schema(sub, at+"/properties/"+name); err != nil {
				return err
			}
		} else if n.extra >= 0 {
			idx = n.extra
		} else if forbidden {
			idx = neverNode
		}
		n.props = append(n.props, idx)
		n.names = append(n.names, name)
		if n.wide != nil {
			setBit(n.wide.all, i)
			if slices.Contains(required, name) {
				setBit(n.wide.required, i)
			}
			c.g.addWide(n.wide, n.keys, keyLit(name), i)
			continue
		}
		bit := uint64(1) << i
		n.all |= bit
		if slices.Contains(required, name) {
			n.required |= bit
		}
		c.g.lits.add(n.keys, keyLit(name), int32(i), bit)
	}
	if err := c.compilePatternProps(n, s, props, at); err != nil {
		return err
	}
	return c.objectRules(n, s, deps, conflicts, sets, at)
}

// dependencies reads dependentRequired, and draft-07's dependencies
// whose values are arrays (one with a schema is refused, naming it).
func dependencies(s map[string]any, at string) (map[string][]string, error) {
	deps := map[string][]string{}
	for _, k := range []string{"dependentRequired", "dependencies"} {
		v, ok := s[k]
		if !ok {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("schema %s: %s must be an object", at, k)
		}
		for name, list := range m {
			arr, ok := list.([]any)
			if !ok {
				return nil, fmt.Errorf("schema %s: keyword %q with a schema for %q is not enforced by the json controller (only lists of property names are)", at, k, name)
			}
			for _, r := range arr {
				r, ok := r.(string)
				if !ok {
					return nil, fmt.Errorf("schema %s: %s must list property names", at, k)
				}
				deps[name] = append(deps[name], r)
			}
		}
	}
	return deps, nil
}
