package json

// depths computes the nesting that each schema needs (a fixpoint, since
// schemas can be recursive) and the properties blocked by it.
func (g *grammar) depths() {
	const inf = maxDepth + 1
	for i := range g.nodes {
		n := &g.nodes[i]
		n.minDepth, n.objDepth, n.arrDepth = inf, inf, inf
		n.blocked = [maxDepth + 1]uint64{}
	}
	for changed := true; changed; {
		changed = false
		for i := range g.nodes {
			if g.nodes[i].kp != nil {
				g.keyDepths(&g.nodes[i])
			}
		}
		for i := range g.nodes {
			n := &g.nodes[i]
			if n.union != nil || n.branches != nil {
				d := int32(inf)
				if n.union != nil {
					for _, k := range n.union {
						if k >= 0 {
							d = min(d, g.nodes[k].minDepth)
						}
					}
				} else {
					d = 0 // as deep as the deepest branch: any may be chosen once the object is open
					for _, b := range n.branches {
						d = max(d, g.nodes[b].objDepth)
					}
				}
				if d != n.minDepth {
					n.minDepth, n.objDepth, n.arrDepth, changed = d, d, inf, true
				}
				continue
			}
			obj := int32(1)
			for bit, p := range n.props {
				if n.isRequired(bit) {
					obj = max(obj, 1+g.nodes[p].minDepth)
				}
			}
			if n.obj != nil {
				obj = n.obj.depth(g, n, obj)
			}
			arr := int32(1)
			for i := range min(int(n.minItems), len(n.prefix)+1) {
				arr = max(arr, 1+g.nodes[n.itemAt(uint32(i))].minDepth) // every item up to minItems must come
			}
			obj, arr = min(obj, inf), min(arr, inf)
			d := int32(inf)
			if n.enum >= 0 || n.types&^(tObject|tArray) != 0 {
				d = 0
			}
			if n.types&tObject != 0 {
				d = min(d, obj)
			}
			if n.types&tArray != 0 {
				d = min(d, arr)
			}
			if obj != n.objDepth || arr != n.arrDepth || d != n.minDepth {
				n.minDepth, n.objDepth, n.arrDepth = d, obj, arr
				changed = true
			}
		}
	}
	for i := range g.nodes {
		n := &g.nodes[i]
		for room := range n.blocked {
			if n.wide != nil {
				clear(n.wide.blocked[room])
			}
			for bit, p := range n.props {
				d := g.nodes[p].minDepth
				if n.obj != nil {
					d = n.obj.propDepth(g, n, bit)
				}
				if d <= int32(room) {
					continue
				}
				if n.wide != nil {
					setBit(n.wide.blocked[room], bit)
				} else {
					n.blocked[room] |= 1 << bit
				}
			}
		}
	}
}
