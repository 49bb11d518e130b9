package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// decodeStep is one decoder of tokenizer.json.
type decodeStep int

const (
	decodeByteLevel decodeStep = iota // tokens → bytes → UTF-8 (lossy)
	decodeFuse                        // tokens joined without separator
)

func buildDecoder(raw json.RawMessage) ([]decodeStep, error) {
	if isNull(raw) {
		return nil, nil
	}
	c, err := parseComponent(raw, "decoder")
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "ByteLevel":
		return []decodeStep{decodeByteLevel}, nil
	case "Fuse":
		return []decodeStep{decodeFuse}, nil
	case "Sequence":
		var steps []decodeStep
		for i, r := range c.Decoders {
			s, err := buildDecoder(r)
			if err != nil {
				return nil, fmt.Errorf("decoder %d of the sequence: %w", i, err)
			}
			steps = append(steps, s...)
		}
		return steps, nil
	}
	return nil, fmt.Errorf("decoder %q is not supported (supported: ByteLevel, Fuse, Sequence)", c.Type)
}

// DecodeOptions tunes Decode and the stream decoder.
type DecodeOptions struct {
	// SkipSpecial leaves out special added tokens (<|im_end|>, ...).
	SkipSpecial bool
}

// Decode returns the text of ids. Byte-level tokens are joined as bytes and
// read as UTF-8 with each maximal ill-formed subsequence (an id sequence
// that cuts a character) shown as U+FFFD, as tokenizers does. Ids outside
// the vocabulary are skipped, as tokenizers does. Hugging Face's Python
// tokenizers may also apply clean_up_tokenization_spaces; this does not, so
// that decoding then encoding gives the text back.
func (t *Tokenizer) Decode(ids []int) string { return t.DecodeWith(ids, DecodeOptions{}) }

// DecodeWith is Decode with options.
func (t *Tokenizer) DecodeWith(ids []int, o DecodeOptions) string {
	if len(t.decoder) == 0 {
		// tokenizers without a decoder joins the tokens with spaces.
		var parts []string
		for _, id := range ids {
			if t.keep(id, o) {
				parts = append(parts, t.tokens[id])
			}
		}
		return strings.Join(parts, " ")
	}
	var b []byte
	for _, id := range ids {
		if t.keep(id, o) {
			b = append(b, t.tokBytes[id]...)
		}
	}
	if !t.byteLevel {
		return string(b)
	}
	return string(appendLossy(nil, b))
}

func (t *Tokenizer) keep(id int, o DecodeOptions) bool {
	if id < 0 || id >= len(t.tokens) || t.tokens[id] == "" {
		return false
	}
	return !(o.SkipSpecial && t.special[id])
}

// StreamDecoder decodes ids one at a time for streaming output: the text of
// a character whose bytes are split across tokens comes out once its last
// byte has arrived. The pieces it returns, then Flush, add up to Decode of
// all the ids.
type StreamDecoder struct {
	t       *Tokenizer
	o       DecodeOptions
	pending []byte
	started bool
}

// NewStreamDecoder returns a decoder for one stream of ids.
func (t *Tokenizer) NewStreamDecoder(o DecodeOptions) *StreamDecoder {
	return &StreamDecoder{t: t, o: o}
}

// Add takes the next id and returns the text it completes ("" while a
// character is incomplete).
func (d *StreamDecoder) Add(id int) string {
	t := d.t
	if !t.keep(id, d.o) {
		return ""
	}
	if len(t.decoder) == 0 {
		s := t.tokens[id]
		if d.started {
			s = " " + s
		}
		d.started = true
		return s
	}
	if !t.byteLevel {
		return string(t.tokBytes[id])
	}
	d.pending = append(d.pending, t.tokBytes[id]...)
	keep := incompleteTail(d.pending)
	out := string(appendLossy(nil, d.pending[:len(d.pending)-keep]))
	d.pending = append(d.pending[:0], d.pending[len(d.pending)-keep:]...)
	return out
}

// Flush returns what is held back, an incomplete character shown as
// U+FFFD, and resets the decoder.
func (d *StreamDecoder) Flush() string {
	out := string(appendLossy(nil, d.pending))
	d.pending = d.pending[:0]
	d.started = false
	return out
}
