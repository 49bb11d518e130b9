package qa

import (
	"errors"
	"math"
	"math/big"
	"math/cmplx"
	"strings"
)

// equalExpressions stands in for rLLM's sympy check (simplify(a − b) == 0
// after parse_expr with implicit multiplication and application): both are
// parsed the same way (^ as power, 2x and x(y+1) as products, sqrt(·), pi,
// n!, each other letter a symbol), then compared exactly when both are
// rational numbers (decimals read exactly) and otherwise at four complex
// points for the symbols, equal when they agree to 1e-9 relative. sympy
// may fail to prove an identity that this finds (it then says unequal),
// and it keeps decimals as binary floats (0.1 + 0.2 − 0.3 is not 0 to
// sympy, and is here); the recorded cases measure the agreement.
func equalExpressions(a, b string) bool {
	x, err := parseSym(a)
	if err != nil {
		return false
	}
	y, err := parseSym(b)
	if err != nil {
		return false
	}
	if rx, ok := x.exact(); ok {
		if ry, ok := y.exact(); ok {
			return rx.Cmp(ry) == 0
		}
	}
	points := [][2]complex128{{0.3718 + 0.2713i, 1.4142 - 0.5772i}, {-1.1 + 0.7i, 0.45 + 1.3i}, {2.25 - 0.9i, -0.61 - 0.33i}, {0.83 + 1.9i, 1.7 + 0.05i}}
	for _, pt := range points {
		vars := map[rune]complex128{}
		k := 0
		for _, v := range symbolsOf(x, symbolsOf(y, nil)) {
			vars[v] = pt[k%2] * complex(float64(1+k/2), 0)
			k++
		}
		va, vb := x.eval(vars), y.eval(vars)
		if cmplx.IsNaN(va) || cmplx.IsNaN(vb) || cmplx.IsInf(va) || cmplx.IsInf(vb) {
			return false
		}
		if cmplx.Abs(va-vb) > 1e-9*math.Max(1, math.Max(cmplx.Abs(va), cmplx.Abs(vb))) {
			return false
		}
	}
	return true
}

type symNode struct {
	op   string // "num", "sym", "pi", "+", "-", "*", "/", "**", "neg", "sqrt", "!"
	val  *big.Rat
	name rune
	kids []*symNode
}

func symbolsOf(n *symNode, acc []rune) []rune {
	if n.op == "sym" {
		for _, r := range acc {
			if r == n.name {
				return acc
			}
		}
		return append(acc, n.name)
	}
	for _, k := range n.kids {
		acc = symbolsOf(k, acc)
	}
	return acc
}

// maxExactPower bounds exact powers (2^1000 is 302 digits).
const maxExactPower = 1000

func (n *symNode) exact() (*big.Rat, bool) {
	switch n.op {
	case "num":
		return n.val, true
	case "sym", "pi", "sqrt":
		return nil, false
	case "neg":
		v, ok := n.kids[0].exact()
		if !ok {
			return nil, false
		}
		return new(big.Rat).Neg(v), true
	case "!":
		v, ok := n.kids[0].exact()
		if !ok || !v.IsInt() || v.Sign() < 0 || v.Num().Cmp(big.NewInt(maxExactPower)) > 0 {
			return nil, false
		}
		f := new(big.Int).MulRange(1, v.Num().Int64())
		return new(big.Rat).SetInt(f), true
	}
	a, ok := n.kids[0].exact()
	if !ok {
		return nil, false
	}
	b, ok := n.kids[1].exact()
	if !ok {
		return nil, false
	}
	switch n.op {
	case "+":
		return new(big.Rat).Add(a, b), true
	case "-":
		return new(big.Rat).Sub(a, b), true
	case "*":
		return new(big.Rat).Mul(a, b), true
	case "/":
		if b.Sign() == 0 {
			return nil, false
		}
		return new(big.Rat).Quo(a, b), true
	case "**":
		if !b.IsInt() || b.Num().CmpAbs(big.NewInt(maxExactPower)) > 0 || (a.Sign() == 0 && b.Sign() < 0) {
			return nil, false
		}
		e := b.Num().Int64()
		num := new(big.Int).Exp(a.Num(), big.NewInt(abs(e)), nil)
		den := new(big.Int).Exp(a.Denom(), big.NewInt(abs(e)), nil)
		if e < 0 {
			num, den = den, num
		}
		return new(big.Rat).SetFrac(num, den), true
	}
	return nil, false
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func (n *symNode) eval(vars map[rune]complex128) complex128 {
	switch n.op {
	case "num":
		f, _ := n.val.Float64()
		return complex(f, 0)
	case "sym":
		return vars[n.name]
	case "pi":
		return complex(math.Pi, 0)
	case "neg":
		return -n.kids[0].eval(vars)
	case "sqrt":
		return cmplx.Sqrt(n.kids[0].eval(vars))
	case "!":
		v := n.kids[0].eval(vars)
		if imag(v) != 0 || real(v) < 0 || real(v) != math.Floor(real(v)) {
			return cmplx.NaN()
		}
		return complex(math.Gamma(real(v)+1), 0)
	}
	a, b := n.kids[0].eval(vars), n.kids[1].eval(vars)
	switch n.op {
	case "+":
		return a + b
	case "-":
		return a - b
	case "*":
		return a * b
	case "/":
		if b == 0 {
			return cmplx.Inf()
		}
		return a / b
	case "**":
		if a == 0 && real(b) < 0 {
			return cmplx.Inf()
		}
		return cmplx.Pow(a, b)
	}
	return cmplx.NaN()
}

var errSym = errors.New("not an expression")

type symToken struct {
	kind string // "num", "sym", "pi", "sqrt", or an operator / parenthesis
	val  *big.Rat
	name rune
}

// symTokens splits an expression as sympy's parser with split_symbols
// would, and inserts the products implicit multiplication makes.
func symTokens(s string) ([]symToken, error) {
	s = strings.ReplaceAll(s, "^", "**")
	var toks []symToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= '0' && c <= '9' || c == '.':
			j := i
			dots := 0
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
				if s[j] == '.' {
					dots++
				}
				j++
			}
			if dots > 1 || s[i:j] == "." {
				return nil, errSym
			}
			v, ok := new(big.Rat).SetString(s[i:j])
			if !ok {
				return nil, errSym
			}
			toks = append(toks, symToken{kind: "num", val: v})
			i = j
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			switch {
			case strings.HasPrefix(s[i:], "sqrt"):
				toks = append(toks, symToken{kind: "sqrt"})
				i += 4
			case strings.HasPrefix(s[i:], "pi"):
				toks = append(toks, symToken{kind: "pi"})
				i += 2
			default:
				toks = append(toks, symToken{kind: "sym", name: rune(c)})
				i++
			}
		case c == '*' && i+1 < len(s) && s[i+1] == '*':
			toks = append(toks, symToken{kind: "**"})
			i += 2
		case strings.IndexByte("+-*/()!", c) >= 0:
			toks = append(toks, symToken{kind: string(c)})
			i++
		default:
			return nil, errSym
		}
	}
	// Implicit multiplication: an operand (or ")" or "!") followed by the
	// start of an operand.
	var out []symToken
	for k, t := range toks {
		if k > 0 {
			p := toks[k-1].kind
			endsOperand := p == "num" || p == "sym" || p == "pi" || p == ")" || p == "!"
			startsOperand := t.kind == "num" || t.kind == "sym" || t.kind == "pi" || t.kind == "(" || t.kind == "sqrt"
			if endsOperand && startsOperand {
				out = append(out, symToken{kind: "*"})
			}
		}
		out = append(out, t)
	}
	return out, nil
}

type symParser struct {
	toks []symToken
	pos  int
}

func parseSym(s string) (*symNode, error) {
	toks, err := symTokens(s)
	if err != nil {
		return nil, err
	}
	if len(toks) > 10000 {
		return nil, errSym
	}
	p := &symParser{toks: toks}
	n, err := p.sum(0)
	if err != nil || p.pos != len(toks) {
		return nil, errSym
	}
	return n, nil
}

// maxDepth bounds the nesting a parse follows.
const maxDepth = 200

func (p *symParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos].kind
	}
	return ""
}

func (p *symParser) sum(d int) (*symNode, error) {
	if d > maxDepth {
		return nil, errSym
	}
	n, err := p.product(d)
	for err == nil && (p.peek() == "+" || p.peek() == "-") {
		op := p.peek()
		p.pos++
		var m *symNode
		if m, err = p.product(d); err == nil {
			n = &symNode{op: op, kids: []*symNode{n, m}}
		}
	}
	return n, err
}

func (p *symParser) product(d int) (*symNode, error) {
	n, err := p.unary(d)
	for err == nil && (p.peek() == "*" || p.peek() == "/") {
		op := p.peek()
		p.pos++
		var m *symNode
		if m, err = p.unary(d); err == nil {
			n = &symNode{op: op, kids: []*symNode{n, m}}
		}
	}
	return n, err
}

func (p *symParser) unary(d int) (*symNode, error) {
	switch p.peek() {
	case "-":
		p.pos++
		n, err := p.unary(d + 1)
		return &symNode{op: "neg", kids: []*symNode{n}}, err
	case "+":
		p.pos++
		return p.unary(d + 1)
	}
	return p.power(d)
}

func (p *symParser) power(d int) (*symNode, error) {
	n, err := p.postfix(d)
	if err != nil || p.peek() != "**" {
		return n, err
	}
	p.pos++
	e, err := p.unary(d + 1)
	return &symNode{op: "**", kids: []*symNode{n, e}}, err
}

func (p *symParser) postfix(d int) (*symNode, error) {
	n, err := p.atom(d)
	for err == nil && p.peek() == "!" {
		p.pos++
		n = &symNode{op: "!", kids: []*symNode{n}}
	}
	return n, err
}

func (p *symParser) atom(d int) (*symNode, error) {
	if p.pos >= len(p.toks) {
		return nil, errSym
	}
	t := p.toks[p.pos]
	p.pos++
	switch t.kind {
	case "num":
		return &symNode{op: "num", val: t.val}, nil
	case "sym":
		return &symNode{op: "sym", name: t.name}, nil
	case "pi":
		return &symNode{op: "pi"}, nil
	case "sqrt":
		arg, err := p.postfix(d + 1)
		return &symNode{op: "sqrt", kids: []*symNode{arg}}, err
	case "(":
		n, err := p.sum(d + 1)
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, errSym
		}
		p.pos++
		return n, nil
	}
	return nil, errSym
}
