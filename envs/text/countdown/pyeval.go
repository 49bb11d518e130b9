package countdown

import (
	"errors"
	"math"
	"math/big"
	"math/cmplx"
	"strconv"
	"strings"
)

// pyNum is a Python number as eval makes one from the characters rLLM's
// countdown reward lets through: an int (arbitrary precision), a float or,
// from a negative base raised to a fraction, a complex.
type pyNum struct {
	kind byte // 'i', 'f' or 'c'
	i    *big.Int
	f    float64
	c    complex128
}

// maxIntBits bounds the integers evaluation builds: Python's are unbounded,
// but an answer such as 9**9**9 would take the program's memory; a result
// beyond this is treated as an evaluation failure (format score).
const maxIntBits = 1 << 16

var errEval = errors.New("not evaluable")

func pyInt(x *big.Int) (pyNum, error) {
	if x.BitLen() > maxIntBits {
		return pyNum{}, errEval
	}
	return pyNum{kind: 'i', i: x}, nil
}

func pyFloat(f float64) pyNum { return pyNum{kind: 'f', f: f} }

// toFloat is Python's float(int): correctly rounded, OverflowError when out
// of range.
func (n pyNum) toFloat() (float64, error) {
	switch n.kind {
	case 'f':
		return n.f, nil
	case 'i':
		f, _ := new(big.Float).SetInt(n.i).Float64()
		if math.IsInf(f, 0) {
			return 0, errEval
		}
		return f, nil
	}
	return 0, errEval
}

func (n pyNum) toComplex() complex128 {
	if n.kind == 'c' {
		return n.c
	}
	f, _ := n.toFloat()
	return complex(f, 0)
}

// pyEval evaluates an arithmetic expression as Python's eval does, for the
// expressions rLLM's pattern admits (digits, + - * / ( ) . and spaces):
// Python's grammar and precedence (** binds tighter than unary minus on its
// left, is right-associative; // and / are floor and true division),
// Python's number literals (no leading zeros but "00", "1." and ".5"), and
// its numeric tower. Anything Python's eval would raise for is an error.
func pyEval(s string) (pyNum, error) {
	toks, err := pyTokens(s)
	if err != nil {
		return pyNum{}, err
	}
	p := &pyParser{toks: toks}
	v, err := p.sum()
	if err != nil {
		return pyNum{}, err
	}
	if p.pos != len(p.toks) {
		return pyNum{}, errEval
	}
	return v, nil
}

type pyToken struct {
	op  string // "+", "-", "*", "/", "//", "**", "(", ")", or "" for a number
	num pyNum
}

// pyTokens splits s as Python's tokenizer would. Space, tab and form feed
// separate tokens; a carriage return is a new line, which eval accepts
// only inside brackets; any other character is a syntax error.
func pyTokens(s string) ([]pyToken, error) {
	var toks []pyToken
	depth := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\f':
			i++
		case c == '\r' || c == '\n':
			if depth == 0 {
				return nil, errEval
			}
			i++
		case c == '(' || c == ')':
			if c == '(' {
				depth++
			} else {
				depth--
			}
			toks = append(toks, pyToken{op: string(c)})
			i++
		case c == '+' || c == '-':
			toks = append(toks, pyToken{op: string(c)})
			i++
		case c == '*' || c == '/':
			if i+1 < len(s) && s[i+1] == c {
				toks = append(toks, pyToken{op: string(c) + string(c)})
				i += 2
			} else {
				toks = append(toks, pyToken{op: string(c)})
				i++
			}
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			intPart := s[i:j]
			if j < len(s) && s[j] == '.' {
				j++
				k := j
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
				if intPart == "" && j == k {
					return nil, errEval // a lone "."
				}
				f, err := strconv.ParseFloat(s[i:j], 64)
				if err != nil && !errors.Is(err, strconv.ErrRange) {
					return nil, errEval
				}
				toks = append(toks, pyToken{num: pyFloat(f)})
			} else {
				if len(intPart) > 1 && intPart[0] == '0' && strings.Trim(intPart, "0") != "" {
					return nil, errEval // Python refuses leading zeros
				}
				x, _ := new(big.Int).SetString(intPart, 10)
				n, err := pyInt(x)
				if err != nil {
					return nil, err
				}
				toks = append(toks, pyToken{num: n})
			}
			// A number right after a number ("1 .5", "1..2") is a syntax
			// error; the parser sees two numbers in a row and refuses.
			i = j
		default:
			return nil, errEval
		}
	}
	return toks, nil
}

type pyParser struct {
	toks []pyToken
	pos  int
}

func (p *pyParser) peek() string {
	if p.pos < len(p.toks) {
		t := p.toks[p.pos]
		if t.op == "" {
			return "num"
		}
		return t.op
	}
	return ""
}

// sum: term (('+'|'-') term)*
func (p *pyParser) sum() (pyNum, error) {
	v, err := p.term()
	for err == nil && (p.peek() == "+" || p.peek() == "-") {
		op := p.toks[p.pos].op
		p.pos++
		var w pyNum
		if w, err = p.term(); err == nil {
			v, err = binop(op, v, w)
		}
	}
	return v, err
}

// term: factor (('*'|'/'|'//') factor)*
func (p *pyParser) term() (pyNum, error) {
	v, err := p.factor()
	for err == nil && (p.peek() == "*" || p.peek() == "/" || p.peek() == "//") {
		op := p.toks[p.pos].op
		p.pos++
		var w pyNum
		if w, err = p.factor(); err == nil {
			v, err = binop(op, v, w)
		}
	}
	return v, err
}

// factor: ('+'|'-') factor | power
func (p *pyParser) factor() (pyNum, error) {
	switch p.peek() {
	case "+", "-":
		op := p.toks[p.pos].op
		p.pos++
		v, err := p.factor()
		if err != nil || op == "+" {
			return v, err
		}
		return binop("-", pyNum{kind: 'i', i: new(big.Int)}, v)
	}
	return p.power()
}

// power: primary ['**' factor]
func (p *pyParser) power() (pyNum, error) {
	v, err := p.primary()
	if err != nil || p.peek() != "**" {
		return v, err
	}
	p.pos++
	w, err := p.factor()
	if err != nil {
		return v, err
	}
	return binop("**", v, w)
}

// primary: a number or a parenthesised sum. A call such as "2(3)" parses
// in Python and fails when run (an int is not callable): an error here.
func (p *pyParser) primary() (pyNum, error) {
	var v pyNum
	switch p.peek() {
	case "num":
		v = p.toks[p.pos].num
		p.pos++
	case "(":
		p.pos++
		if p.peek() == ")" { // (): an empty tuple, which is no number
			return pyNum{}, errEval
		}
		var err error
		if v, err = p.sum(); err != nil {
			return v, err
		}
		if p.peek() != ")" {
			return v, errEval
		}
		p.pos++
	default:
		return v, errEval
	}
	if p.peek() == "(" || p.peek() == "num" {
		return v, errEval
	}
	return v, nil
}

// binop applies a Python arithmetic operator.
func binop(op string, a, b pyNum) (pyNum, error) {
	if a.kind == 'c' || b.kind == 'c' {
		x, y := a.toComplex(), b.toComplex()
		switch op {
		case "+":
			return pyNum{kind: 'c', c: x + y}, nil
		case "-":
			return pyNum{kind: 'c', c: x - y}, nil
		case "*":
			return pyNum{kind: 'c', c: x * y}, nil
		case "/":
			if y == 0 {
				return pyNum{}, errEval
			}
			return pyNum{kind: 'c', c: x / y}, nil
		case "**":
			if x == 0 && (real(y) < 0 || imag(y) != 0) {
				return pyNum{}, errEval
			}
			return pyNum{kind: 'c', c: cmplx.Pow(x, y)}, nil
		}
		return pyNum{}, errEval // complex floor division
	}
	if a.kind == 'i' && b.kind == 'i' {
		x, y := a.i, b.i
		switch op {
		case "+":
			return pyInt(new(big.Int).Add(x, y))
		case "-":
			return pyInt(new(big.Int).Sub(x, y))
		case "*":
			if x.BitLen()+y.BitLen() > maxIntBits+1 {
				return pyNum{}, errEval
			}
			return pyInt(new(big.Int).Mul(x, y))
		case "/":
			if y.Sign() == 0 {
				return pyNum{}, errEval
			}
			f, _ := new(big.Rat).SetFrac(x, y).Float64()
			if math.IsInf(f, 0) {
				return pyNum{}, errEval // OverflowError
			}
			return pyFloat(f), nil
		case "//":
			if y.Sign() == 0 {
				return pyNum{}, errEval
			}
			q, r := new(big.Int).QuoRem(x, y, new(big.Int))
			if r.Sign() != 0 && (r.Sign() < 0) != (y.Sign() < 0) {
				q.Sub(q, big.NewInt(1))
			}
			return pyInt(q)
		case "**":
			if y.Sign() < 0 {
				fx, err1 := a.toFloat()
				fy, err2 := b.toFloat()
				if err1 != nil || err2 != nil {
					return pyNum{}, errEval
				}
				return floatPow(fx, fy)
			}
			if x.BitLen() > 1 && (!y.IsInt64() || int64(x.BitLen()-1)*y.Int64() > maxIntBits) {
				return pyNum{}, errEval
			}
			return pyInt(new(big.Int).Exp(x, y, nil))
		}
	}
	x, err := a.toFloat()
	if err != nil {
		return pyNum{}, err
	}
	y, err := b.toFloat()
	if err != nil {
		return pyNum{}, err
	}
	switch op {
	case "+":
		return pyFloat(x + y), nil
	case "-":
		return pyFloat(x - y), nil
	case "*":
		return pyFloat(x * y), nil
	case "/":
		if y == 0 {
			return pyNum{}, errEval
		}
		return pyFloat(x / y), nil
	case "//":
		return floatFloorDiv(x, y)
	case "**":
		return floatPow(x, y)
	}
	return pyNum{}, errEval
}

// floatFloorDiv is CPython's float_floor_div (float_divmod's quotient).
func floatFloorDiv(vx, wx float64) (pyNum, error) {
	if wx == 0 {
		return pyNum{}, errEval
	}
	mod := math.Mod(vx, wx)
	div := (vx - mod) / wx
	if mod != 0 {
		if (wx < 0) != (mod < 0) {
			div -= 1.0
		}
	}
	var floordiv float64
	if div != 0 {
		floordiv = math.Floor(div)
		if div-floordiv > 0.5 {
			floordiv += 1.0
		}
	} else {
		floordiv = math.Copysign(0, vx/wx)
	}
	return pyFloat(floordiv), nil
}

// floatPow is CPython's float_pow: 0 to a negative power raises, a
// negative base to a fractional power is complex, an overflow raises.
func floatPow(x, y float64) (pyNum, error) {
	if x == 0 && y < 0 {
		return pyNum{}, errEval
	}
	if x < 0 && y != math.Floor(y) && !math.IsInf(y, 0) {
		return pyNum{kind: 'c', c: cmplx.Pow(complex(x, 0), complex(y, 0))}, nil
	}
	r := math.Pow(x, y)
	if math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
		return pyNum{}, errEval // OverflowError
	}
	return pyFloat(r), nil
}
