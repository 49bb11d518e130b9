// Package tokenizer turns text into token ids and back exactly as Hugging
// Face's tokenizers library does for the byte-level BPE models people
// fine-tune (Qwen2/2.5/3, Llama-3, GPT-2 and SmolLM), read from their
// tokenizer.json and tokenizer_config.json, plus a character-level tokenizer
// for models trained from scratch (NewChar), saved in the same format.
//
// Encoding follows tokenizers' pipeline: added tokens are cut out first
// (longest match), the rest is normalized (NFC), split by the pre-tokenizer
// (the model family's regex, digits, ByteLevel) and each piece merged by BPE
// rank. Ids agree with the reference on the corpus in testdata (see
// scripts/tokenizer-reference). A Tokenizer is safe for concurrent use.
package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agenttrainer/agenttrainer/internal/inputfile"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Tokenizer encodes and decodes text for one model.
type Tokenizer struct {
	model   *bpe
	tokens  []string // id → token as tokenizer.json writes it ("" for unused ids)
	ids     map[string]int
	added   []AddedToken
	special map[int]bool

	rawAdded, normAdded *addedMatcher
	normalize           func(string) string
	pre                 []preStep

	prefix, suffix []int // post-processor ids around a sequence

	decoder   []decodeStep
	tokBytes  [][]byte // id → bytes, for the ByteLevel decoder
	byteLevel bool     // the decoder maps tokens back to bytes

	bos, eos, pad, unk string
	chatTemplate       string

	files      map[string][]byte // the files it was read from, for Save
	modelVocab map[string]int    // model.vocab while building
}

// maxVocab bounds the ids a file may use: the largest vocabularies in use
// have about 262,000 tokens.
const maxVocab = 1 << 21

// maxFileSize bounds what Load reads: the largest tokenizer.json files in
// use are under 40 MB; a bound of three times that keeps what parsing a
// hostile file holds well under a gigabyte.
const maxFileSize = 128 << 20

// Load reads a tokenizer from a model directory: tokenizer.json, and
// tokenizer_config.json (special tokens, chat template) and
// chat_template.jinja where present.
func Load(dir string) (*Tokenizer, error) {
	path := filepath.Join(dir, "tokenizer.json")
	data, err := readLimited(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s has no tokenizer.json: a model directory needs the tokenizer.json its model was trained with (Hugging Face's format)", dir)
		}
		return nil, err
	}
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	cfg, err := readLimited(cfgPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	tmplPath := filepath.Join(dir, "chat_template.jinja")
	tmpl, err := readLimited(tmplPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	stm, err := readLimited(filepath.Join(dir, "special_tokens_map.json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	t, err := parse(data, cfg, stm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if tmpl != nil {
		t.chatTemplate = string(tmpl)
		t.files["chat_template.jinja"] = tmpl
	}
	return t, nil
}

// readLimited reads a tokenizer file through the one reader of
// user-named files: regular files only (a FIFO would block, /dev/zero never
// end), at most maxFileSize bytes.
func readLimited(path string) ([]byte, error) {
	return inputfile.Read(path, maxFileSize, "tokenizer file")
}

// Parse builds a tokenizer from the contents of tokenizer.json and,
// optionally (nil), tokenizer_config.json.
func Parse(tokenizerJSON, configJSON []byte) (*Tokenizer, error) {
	return parse(tokenizerJSON, configJSON, nil)
}

func parse(data, cfgData, stmData []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("not a valid tokenizer.json: %v", jsonError(data, err))
	}
	t := &Tokenizer{files: map[string][]byte{"tokenizer.json": data}}
	if err := t.buildModel(&f); err != nil {
		return nil, err
	}
	var err error
	if t.normalize, err = buildNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if t.pre, err = buildPre(f.PreTokenizer); err != nil {
		return nil, err
	}
	if err := t.buildPost(f.PostProcessor); err != nil {
		return nil, err
	}
	if t.decoder, err = buildDecoder(f.Decoder); err != nil {
		return nil, err
	}
	byteLevelPre := false
	for _, p := range t.pre {
		if _, ok := p.(byteLevelStep); ok {
			byteLevelPre = true
		}
	}
	for _, d := range t.decoder {
		if d == decodeByteLevel {
			t.byteLevel = true
		}
	}
	if err := t.finishModel(byteLevelPre); err != nil {
		return nil, err
	}
	for _, raw := range [][]byte{cfgData, stmData} {
		if raw == nil {
			continue
		}
		var c configJSON
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, fmt.Errorf("tokenizer_config.json: %v", jsonError(raw, err))
		}
		fill := func(dst *string, v tokenName) {
			if *dst == "" {
				*dst = string(v)
			}
		}
		fill(&t.bos, c.BOS)
		fill(&t.eos, c.EOS)
		fill(&t.pad, c.PAD)
		fill(&t.unk, c.UNK)
		if t.chatTemplate == "" {
			if t.chatTemplate, err = chatTemplate(c.ChatTemplate); err != nil {
				return nil, fmt.Errorf("tokenizer_config.json: %v", err)
			}
		}
	}
	if cfgData != nil {
		t.files["tokenizer_config.json"] = cfgData
	}
	for _, name := range []string{t.bos, t.eos, t.pad, t.unk} {
		if _, ok := t.ids[name]; name != "" && !ok {
			return nil, fmt.Errorf("tokenizer_config.json names the special token %q, which is not in the vocabulary", name)
		}
	}
	return t, nil
}

// jsonError adds the line of a syntax error to err.
func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + strings.Count(string(data[:min(int(se.Offset), len(data))]), "\n")
		return fmt.Errorf("line %d: %v", line, err)
	}
	return err
}

func (t *Tokenizer) buildModel(f *fileJSON) error {
	m := f.Model
	switch m.Type {
	case "BPE":
	case "":
		if m.Vocab == nil {
			return errors.New("no \"model\" section: not a tokenizer.json of Hugging Face's tokenizers")
		}
		// tokenizers writes the type; older files that omit it are BPE when
		// they have merges.
		if m.Merges == nil {
			return errors.New("model has no \"type\" and no merges: only BPE models are supported")
		}
	default:
		return fmt.Errorf("model type %q is not supported: only BPE models are (byte-level ones such as Qwen2/2.5/3, Llama-3, GPT-2 and SmolLM, and character-level ones)", m.Type)
	}
	if m.Dropout != nil && *m.Dropout > 0 {
		return fmt.Errorf("BPE dropout %g is not supported: it makes encoding random; set \"dropout\" to null", *m.Dropout)
	}
	if m.ByteFallback {
		return errors.New("BPE with byte_fallback (SentencePiece-style, as Llama-2 and Mistral) is not supported; byte-level BPE models (Qwen, Llama-3, GPT-2, SmolLM) are")
	}
	if p := m.ContinuingSubwordPrefix; p != nil && *p != "" {
		return fmt.Errorf("BPE continuing_subword_prefix %q is not supported", *p)
	}
	if p := m.EndOfWordSuffix; p != nil && *p != "" {
		return fmt.Errorf("BPE end_of_word_suffix %q is not supported", *p)
	}
	if len(m.Vocab) == 0 {
		return errors.New("model has an empty vocabulary")
	}
	size := 0
	for tok, id := range m.Vocab {
		if id < 0 {
			return fmt.Errorf("vocabulary token %q has the negative id %d", tok, id)
		}
		size = max(size, id+1)
	}
	for _, a := range f.AddedTokens {
		if a.ID < 0 {
			return fmt.Errorf("added token %q has the negative id %d", a.Content, a.ID)
		}
		size = max(size, a.ID+1)
	}
	if size > maxVocab {
		return fmt.Errorf("vocabulary ids go up to %d: more than any model's (limit %d)", size-1, maxVocab)
	}
	t.tokens = make([]string, size)
	t.ids = make(map[string]int, len(m.Vocab)+len(f.AddedTokens))
	for tok, id := range m.Vocab {
		if t.tokens[id] != "" {
			a, b := t.tokens[id], tok
			if a > b {
				a, b = b, a
			}
			return fmt.Errorf("vocabulary tokens %q and %q share the id %d", a, b, id)
		}
		t.tokens[id] = tok
		t.ids[tok] = id
	}
	t.special = map[int]bool{}
	for _, a := range f.AddedTokens {
		if a.Content == "" {
			return fmt.Errorf("added token %d has empty content", a.ID)
		}
		if prev := t.tokens[a.ID]; prev != "" && prev != a.Content {
			return fmt.Errorf("added token %q has the id %d of vocabulary token %q", a.Content, a.ID, prev)
		}
		t.tokens[a.ID] = a.Content
		t.ids[a.Content] = a.ID
		if a.Special {
			t.special[a.ID] = true
		}
	}
	t.added = f.AddedTokens
	t.rawAdded = newAddedMatcher(t.added, func(a AddedToken) bool { return !a.Normalized })
	t.normAdded = newAddedMatcher(t.added, func(a AddedToken) bool { return a.Normalized })

	bm := &bpe{merges: make(map[uint64]merge, len(m.Merges)), unk: -1, fuseUnk: m.FuseUnk,
		ignoreMerges: m.IgnoreMerges, cache: map[string][]int{}}
	if m.UnkToken != nil && *m.UnkToken != "" {
		id, ok := m.Vocab[*m.UnkToken]
		if !ok {
			return fmt.Errorf("unk_token %q is not in the vocabulary", *m.UnkToken)
		}
		bm.unk = int32(id)
		t.unk = *m.UnkToken
	}
	for i, raw := range m.Merges {
		a, b, err := parseMerge(raw)
		if err != nil {
			return fmt.Errorf("merges[%d]: %v", i, err)
		}
		ia, oka := m.Vocab[a]
		ib, okb := m.Vocab[b]
		iab, okab := m.Vocab[a+b]
		switch {
		case !oka:
			return fmt.Errorf("merges[%d] (%q %q): %q is not in the vocabulary", i, a, b, a)
		case !okb:
			return fmt.Errorf("merges[%d] (%q %q): %q is not in the vocabulary", i, a, b, b)
		case !okab:
			return fmt.Errorf("merges[%d] (%q %q): the merged token %q is not in the vocabulary", i, a, b, a+b)
		}
		bm.merges[pairKey(int32(ia), int32(ib))] = merge{int32(i), int32(iab)}
	}
	t.model = bm
	t.modelVocab = m.Vocab
	return nil
}

// finishModel keys the model's vocabulary by what encoding produces: raw
// bytes for byte-level models, the tokens themselves otherwise.
func (t *Tokenizer) finishModel(byteLevelPre bool) error {
	m := t.model
	m.byteLevel = byteLevelPre
	m.vocab = make(map[string]int32, len(t.ids))
	vocab := t.modelVocab
	t.modelVocab = nil
	for tok, id := range vocab {
		key := tok
		if byteLevelPre {
			b, ok := byteLevelDecode(tok)
			if !ok {
				continue // never produced from bytes
			}
			key = string(b)
		}
		if _, dup := m.vocab[key]; !dup || int32(id) < m.vocab[key] {
			m.vocab[key] = int32(id)
		}
	}
	if byteLevelPre {
		missing := 0
		for b := 0; b < 256; b++ {
			id, ok := vocab[string(byteToRune[b])]
			if !ok {
				m.byteIDs[b] = -1
				missing++
				continue
			}
			m.byteIDs[b] = int32(id)
		}
		if missing > 0 && m.unk < 0 {
			// Real byte-level vocabularies hold all 256 bytes; a file that
			// lacks some would silently drop those bytes.
			return fmt.Errorf("the byte-level vocabulary lacks %d of the 256 byte tokens and has no unk_token", missing)
		}
	}
	t.tokBytes = make([][]byte, len(t.tokens))
	for id, tok := range t.tokens {
		if t.byteLevel {
			t.tokBytes[id], _ = byteLevelDecode(tok)
		} else {
			t.tokBytes[id] = []byte(tok)
		}
	}
	return nil
}

func buildNormalizer(raw json.RawMessage) (func(string) string, error) {
	if isNull(raw) {
		return nil, nil
	}
	c, err := parseComponent(raw, "normalizer")
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "NFC":
		return normalizer(norm.NFC), nil
	case "NFD":
		return normalizer(norm.NFD), nil
	case "NFKC":
		return normalizer(norm.NFKC), nil
	case "NFKD":
		return normalizer(norm.NFKD), nil
	case "Lowercase":
		return strings.ToLower, nil
	case "Sequence":
		var fs []func(string) string
		for i, r := range c.Normalizers {
			f, err := buildNormalizer(r)
			if err != nil {
				return nil, fmt.Errorf("normalizer %d of the sequence: %w", i, err)
			}
			if f != nil {
				fs = append(fs, f)
			}
		}
		return func(s string) string {
			for _, f := range fs {
				s = f(s)
			}
			return s
		}, nil
	}
	return nil, fmt.Errorf("normalizer %q is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, Sequence)", c.Type)
}

func (t *Tokenizer) buildPost(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	c, err := parseComponent(raw, "post_processor")
	if err != nil {
		return err
	}
	switch c.Type {
	case "ByteLevel":
		return nil // offsets only
	case "Sequence":
		for _, r := range c.Processors {
			if err := t.buildPost(r); err != nil {
				return err
			}
		}
		return nil
	case "TemplateProcessing":
		if len(t.prefix)+len(t.suffix) > 0 {
			return errors.New("post_processor has two TemplateProcessing entries")
		}
		seen := false
		for _, p := range c.Single {
			switch {
			case p.Sequence != nil:
				if seen {
					return errors.New("post_processor's single template has two sequences")
				}
				seen = true
			case p.SpecialToken != nil:
				st, ok := c.SpecialTokens[p.SpecialToken.ID]
				if !ok {
					return fmt.Errorf("post_processor's template names %q, which is not among its special_tokens", p.SpecialToken.ID)
				}
				for _, id := range st.IDs {
					if id < 0 || id >= len(t.tokens) {
						return fmt.Errorf("post_processor's %q has the id %d, outside the vocabulary", p.SpecialToken.ID, id)
					}
				}
				if seen {
					t.suffix = append(t.suffix, st.IDs...)
				} else {
					t.prefix = append(t.prefix, st.IDs...)
				}
			default:
				return errors.New("post_processor's single template has an entry that is neither SpecialToken nor Sequence")
			}
		}
		return nil
	}
	return fmt.Errorf("post_processor %q is not supported (supported: TemplateProcessing, ByteLevel, Sequence)", c.Type)
}

// Encode returns the ids of text; addSpecial adds the post-processor's
// tokens (Llama-3's <|begin_of_text|>; nothing for Qwen). Special tokens
// written in the text are recognized. Invalid UTF-8 is read with each
// maximal ill-formed subsequence replaced by U+FFFD (Hugging Face's Python
// refuses strings that are not valid Unicode; JavaScript's reference and
// Go's JSON decoding replace lone surrogates by U+FFFD the same way):
// callers that must refuse such text check utf8.ValidString first.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int {
	text = sanitize(text)
	out := make([]int, 0, len(text)/3+4)
	if addSpecial {
		out = append(out, t.prefix...)
	}
	var pieces []piece
	pieces = t.rawAdded.split(text, t.added, pieces)
	var words []string
	for _, p := range pieces {
		if p.token >= 0 {
			out = append(out, t.added[p.token].ID)
			continue
		}
		s := p.text
		if t.normalize != nil {
			s = t.normalize(s)
		}
		var sub []piece
		sub = t.normAdded.split(s, t.added, sub)
		for _, q := range sub {
			if q.token >= 0 {
				out = append(out, t.added[q.token].ID)
				continue
			}
			words = t.preTokenize(q.text, words[:0])
			for _, w := range words {
				out = t.model.encode(w, out)
			}
		}
	}
	if addSpecial {
		out = append(out, t.suffix...)
	}
	return out
}

// preTokenize runs the pre-tokenizer steps, each over every piece of the
// one before, as tokenizers' Sequence does.
func (t *Tokenizer) preTokenize(s string, out []string) []string {
	if s == "" {
		return out
	}
	out = append(out, s)
	var next []string
	for _, step := range t.pre {
		next = next[:0]
		for _, p := range out {
			next = step.split(p, next)
		}
		out, next = next, out
	}
	return out
}

// VocabSize is one more than the largest token id (vocabulary and added
// tokens): the size of the model's embedding needs at least this many rows.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// Token returns the token of id as tokenizer.json writes it (the ByteLevel
// alphabet for byte-level models: "Ġthe" for " the"); ok is false for ids
// outside the vocabulary.
func (t *Tokenizer) Token(id int) (tok string, ok bool) {
	if id < 0 || id >= len(t.tokens) || t.tokens[id] == "" {
		return "", false
	}
	return t.tokens[id], true
}

// TokenID returns the id of a token as tokenizer.json writes it, such as
// "<|im_end|>" or "<|eot_id|>".
func (t *Tokenizer) TokenID(tok string) (id int, ok bool) {
	id, ok = t.ids[tok]
	return id, ok
}

// Vocab returns a copy of the token → id map (vocabulary and added tokens).
func (t *Tokenizer) Vocab() map[string]int {
	v := make(map[string]int, len(t.ids))
	for k, id := range t.ids {
		v[k] = id
	}
	return v
}

// AddedTokens returns the added tokens, in id order.
func (t *Tokenizer) AddedTokens() []AddedToken {
	a := append([]AddedToken(nil), t.added...)
	sort.Slice(a, func(i, j int) bool { return a[i].ID < a[j].ID })
	return a
}

// IsSpecial reports whether id is a special added token.
func (t *Tokenizer) IsSpecial(id int) bool { return t.special[id] }

// SpecialToken is one of the named special tokens of tokenizer_config.json.
type SpecialToken struct {
	Token string
	ID    int
}

func (t *Tokenizer) named(tok string) (SpecialToken, bool) {
	if tok == "" {
		return SpecialToken{}, false
	}
	return SpecialToken{tok, t.ids[tok]}, true
}

// BOS returns the beginning-of-sequence token, if the model names one.
func (t *Tokenizer) BOS() (SpecialToken, bool) { return t.named(t.bos) }

// EOS returns the end-of-sequence token (Qwen's <|im_end|>, Llama-3
// Instruct's <|eot_id|>), if the model names one.
func (t *Tokenizer) EOS() (SpecialToken, bool) { return t.named(t.eos) }

// PAD returns the padding token, if the model names one.
func (t *Tokenizer) PAD() (SpecialToken, bool) { return t.named(t.pad) }

// UNK returns the unknown token, if the model has one.
func (t *Tokenizer) UNK() (SpecialToken, bool) { return t.named(t.unk) }

// ChatTemplate returns the model's Jinja chat template ("" if it has none).
func (t *Tokenizer) ChatTemplate() string { return t.chatTemplate }
