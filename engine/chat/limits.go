package chat

import (
	"errors"
	"fmt"
	"reflect"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"

	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// Bounds on a chat template and on one render of it. A template is code
// from the model folder: a loop of 1e8 iterations took 2.6 GB in 25 s, a
// recursive macro or 100,000 nested brackets overflowed the stack, and
// "a" * 10**11 ran the runtime out of memory. Real templates stay far
// below these: the Llama 3.1 one is 5 KB and renders in a millisecond.
const (
	// MaxSource bounds a template's source, from chat_template.jinja or
	// from tokenizer_config.json's chat_template.
	MaxSource = limitedfile.Template
	// MaxTagTokens bounds the tokens of one {{ }} or {% %} tag, so that
	// gonja's recursive parser cannot overflow the stack.
	MaxTagTokens = 1000
	// MaxOutput bounds the rendered prompt, and the width of a string a
	// filter or a repetition ('-' * n) may build.
	MaxOutput = 16 << 20
	// MaxRenderTime bounds one render.
	MaxRenderTime = 2 * time.Second
	// MaxRenderAlloc bounds the memory a render allocates (garbage
	// included: what it holds at once is less).
	MaxRenderAlloc = 256 << 20
	// MaxRange bounds range(), as Jinja's sandbox does.
	MaxRange = 100_000
	// MaxNesting bounds nested blocks and macro calls under way.
	MaxNesting = 1000
)

// limits are the render bounds of one Template (tests make them small).
type limits struct {
	output int
	time   time.Duration
	memory uint64
}

var defaultLimits = limits{output: MaxOutput, time: MaxRenderTime, memory: MaxRenderAlloc}

// budgetKey names the render's budget among the template variables. It
// is not an identifier, so a template cannot reach it.
const budgetKey = "driftwood budget"

// budget is what one render may still spend. The first limit reached is
// kept: every later check fails with it, so a template cannot carry on
// past it, and render reports it however gonja wrapped it on the way.
type budget struct {
	limits
	deadline time.Time
	depth    int
	allocs   []metrics.Sample
	allocs0  uint64
	lefts    map[int][]*exec.Value // left operands of the '*' being evaluated, by operation
	err      error
}

func newBudget(l limits) *budget {
	b := &budget{limits: l, deadline: time.Now().Add(l.time), allocs: []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}, lefts: map[int][]*exec.Value{}}
	b.allocs0 = b.allocated()
	return b
}

// allocated is the heap memory the program has allocated so far. What
// other goroutines allocate during the render counts too; in Driftwood
// they allocate little while a prompt is being rendered.
func (b *budget) allocated() uint64 {
	metrics.Read(b.allocs)
	if b.allocs[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return b.allocs[0].Value.Uint64()
}

// budgetOf finds the render's budget in a template context.
func budgetOf(ctx *exec.Context) *budget {
	b, _ := ctx.Get(budgetKey)
	bb, _ := b.(*budget)
	return bb
}

// fail records err as the reason the render stops, unless one is already
// recorded, and returns the recorded one.
func (b *budget) fail(err error) error {
	if b.err == nil {
		b.err = err
	}
	return b.err
}

// check fails once the render has run out of time or memory.
func (b *budget) check() error {
	switch {
	case b == nil:
		return errors.New("rendered without a budget")
	case b.err != nil:
		return b.err
	case time.Now().After(b.deadline):
		return b.fail(fmt.Errorf("rendering took longer than %v, the most Driftwood allows", b.time))
	}
	if a := b.allocated(); a-b.allocs0 > b.memory {
		return b.fail(fmt.Errorf("rendering allocated more than %s of memory, the most Driftwood allows", limitedfile.Size(int64(b.memory))))
	}
	return nil
}

// enter checks the budget as a block or macro call starts; leave must
// follow.
func (b *budget) enter() error {
	if err := b.check(); err != nil {
		return err
	}
	if b.depth++; b.depth > MaxNesting {
		return b.fail(fmt.Errorf("blocks and macro calls nest deeper than %d", MaxNesting))
	}
	return nil
}

func (b *budget) leave() { b.depth-- }

// wide refuses a string of n bytes, what, when the output could not hold
// it.
func (b *budget) wide(n int, what string) error {
	if n < 0 || n > b.output {
		return b.tooWide(what)
	}
	return nil
}

func (b *budget) tooWide(what string) error {
	return b.fail(fmt.Errorf("%s would be longer than the %s a render may produce", what, limitedfile.Size(int64(b.output))))
}

// output collects the rendered prompt, failing past the budget's bound.
type output struct {
	b   *budget
	buf strings.Builder
}

func (w *output) Write(p []byte) (int, error) {
	if err := w.b.check(); err != nil {
		return 0, err
	}
	if err := w.b.wide(w.buf.Len()+len(p), "the prompt"); err != nil {
		return 0, err
	}
	return w.buf.Write(p)
}

// checkTags refuses a tag of more than MaxTagTokens tokens before gonja
// parses the template recursively.
func checkTags(source string) error {
	s := tokens.LexAll(source, gonjaConfig)
	n := 0
	for ; !s.End(); s.Next() {
		tok := s.Current()
		switch tok.Type {
		case tokens.BlockBegin, tokens.VariableBegin:
			n = 0
		case tokens.BlockEnd, tokens.VariableEnd:
		default:
			if n++; n > MaxTagTokens {
				return fmt.Errorf("line %d: a tag of more than %d tokens", tok.Line, MaxTagTokens)
			}
		}
	}
	return nil
}

// boundedRange is range() returning a list of at most MaxRange numbers.
// (gonja's streams them through a goroutine that a loop left early never
// stops, and materialises them all anyway.)
func boundedRange(e *exec.Evaluator, params *exec.VarArgs) ([]int, error) {
	start, stop, step := 0, 0, 1
	ints := true
	for _, a := range params.Args {
		ints = ints && a.IsInteger()
	}
	switch n := len(params.Args); {
	case !ints || n == 0 || n > 3 || len(params.KwArgs) > 0:
		return nil, errors.New("range: expected [start, ]stop[, step], all integers")
	case n == 1:
		stop = params.Args[0].Integer()
	default:
		start, stop = params.Args[0].Integer(), params.Args[1].Integer()
		if n == 3 {
			step = params.Args[2].Integer()
		}
	}
	if step == 0 {
		return nil, errors.New("range: step cannot be 0")
	}
	count := 0
	switch {
	case step > 0 && stop > start:
		count = int((uint64(stop-start) + uint64(step) - 1) / uint64(step))
	case step < 0 && start > stop:
		count = int((uint64(start-stop) + uint64(-step) - 1) / uint64(-step))
	}
	if count > MaxRange || count < 0 {
		return nil, budgetOf(e.Environment.Context).fail(fmt.Errorf("range of more than %d numbers", MaxRange))
	}
	out := make([]int, count)
	for i := range out {
		out[i] = start + i*step
	}
	return out, nil
}

// guarded is a control structure that checks the budget and counts the
// nesting around its work.
type guarded struct{ exec.ControlStructure }

func (g guarded) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	b := budgetOf(r.Environment.Context)
	if err := b.enter(); err != nil {
		return err
	}
	defer b.leave()
	return g.ControlStructure.Execute(r, tag)
}

// widthFilters and widthMethods build a string, or a list of lists, as
// wide as an integer argument.
var (
	widthFilters = map[string]bool{"center": true, "indent": true, "batch": true, "slice": true}
	widthMethods = map[string]bool{"center": true, "ljust": true, "rjust": true, "zfill": true, "expandtabs": true}
)

// guardFilter wraps a filter: the budget is checked around it, and a
// width filter's integer argument wider than the output (center(10**11)
// ran the runtime out of memory) is refused.
func guardFilter(name string, f exec.FilterFunction) exec.FilterFunction {
	return func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
		b := budgetOf(e.Environment.Context)
		if err := b.check(); err != nil {
			return exec.AsValue(err)
		}
		if widthFilters[name] {
			if n, wide := widest(params, b.output); wide {
				return exec.AsValue(b.tooWide(fmt.Sprintf("the result of filter %s with argument %d", name, n)))
			}
		}
		out := f(e, in, params)
		if err := b.check(); err != nil {
			return exec.AsValue(err)
		}
		return out
	}
}

// widest finds an integer argument above limit.
func widest(params *exec.VarArgs, limit int) (int, bool) {
	for _, a := range params.Args {
		if a.IsInteger() && a.Integer() > limit {
			return a.Integer(), true
		}
	}
	for _, a := range params.KwArgs {
		if a.IsInteger() && a.Integer() > limit {
			return a.Integer(), true
		}
	}
	return 0, false
}

// String repetition ('-' * n) is guarded by two filters that
// guardRepeats puts on the operands of every '*', both given the
// operation's number in the template: the first records the left operand
// (on a stack, as the operation may be evaluated again inside its right
// operand), the second checks the product against it.
const (
	repeatLeftFilter = "driftwood repeat left"
	repeatFilter     = "driftwood repeat"
)

// filterRepeatLeft records the left operand of the operation and passes
// it through.
func filterRepeatLeft(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	b := budgetOf(e.Environment.Context)
	if len(params.Args) == 1 && !in.IsError() {
		id := params.Args[0].Integer()
		b.lefts[id] = append(b.lefts[id], in)
	}
	return in
}

// filterRepeat passes the count n through, unless left * n would repeat
// a string past the output bound; a negative count gives the empty
// string, as in Python (strings.Repeat panics on it).
func filterRepeat(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	b := budgetOf(e.Environment.Context)
	if len(params.Args) != 1 {
		return in
	}
	id := params.Args[0].Integer()
	stack := b.lefts[id]
	if len(stack) == 0 {
		return in
	}
	left := stack[len(stack)-1]
	b.lefts[id] = stack[:len(stack)-1]
	if !left.IsString() || in.IsFloat() {
		return in // not a repetition: gonja multiplies numbers then
	}
	n := in.Integer() // as gonja takes it, whatever in's type
	if n < 0 {
		return exec.AsValue(0)
	}
	if s := len(left.String()); s > 0 && n > b.output/s {
		return exec.AsValue(b.tooWide(fmt.Sprintf("repeating a string of %d bytes %d times", s, n)))
	}
	return in
}

// guardRepeats puts the repetition guards on the operands of every '*'
// in the template. gonja keeps some expressions in unexported fields
// (those of {% set %}, {% if %}), so the tree is walked by reflection and
// each operation changed through its pointer.
func guardRepeats(root *nodes.Template) {
	ops := 0
	type seenKey struct {
		t reflect.Type
		p uintptr
	}
	seen := map[seenKey]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			k := seenKey{v.Type(), v.Pointer()}
			if v.IsNil() || seen[k] || v.Type() == tokenType {
				return
			}
			seen[k] = true
			if v.Type() == binaryType {
				// NewAt makes the pointer usable although it may have
				// been read from an unexported field.
				be := reflect.NewAt(binaryType.Elem(), v.UnsafePointer()).Interface().(*nodes.BinaryExpression)
				walk(reflect.ValueOf(be.Left))
				walk(reflect.ValueOf(be.Right))
				if op := be.Operator; op != nil && op.Token != nil && op.Token.Type == tokens.Multiply {
					ops++
					id := &tokens.Token{Type: tokens.Integer, Val: strconv.Itoa(ops), Line: op.Token.Line, Col: op.Token.Col}
					guard := func(x nodes.Expression, filter string) nodes.Expression {
						return &nodes.FilteredExpression{Expression: x, Filters: []*nodes.FilterCall{{
							Token: op.Token, Name: filter, Args: []nodes.Expression{&nodes.Integer{Location: id, Val: ops}}, Kwargs: map[string]nodes.Expression{},
						}}}
					}
					be.Left, be.Right = guard(be.Left, repeatLeftFilter), guard(be.Right, repeatFilter)
				}
				return
			}
			walk(v.Elem())
		case reflect.Interface:
			walk(v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Value())
			}
		}
	}
	walk(reflect.ValueOf(root))
}

var (
	binaryType = reflect.TypeFor[*nodes.BinaryExpression]()
	tokenType  = reflect.TypeFor[*tokens.Token]()
)
