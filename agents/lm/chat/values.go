package chat

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ardanlabs/jinja"
)

// jsonValue decodes JSON into a template value keeping the order of object
// keys, as Python's json does: tojson then writes tool schemas in the order
// the user gave them, which is part of the prompt the model sees.
func jsonValue(raw []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := dec.Token(); err == nil {
		return jinja.Undefined(), fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				d.AsDict().Set(k.(string), v)
			}
			_, err := dec.Token()
			return d, err
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			_, err := dec.Token()
			return jinja.NewList(items), err
		}
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return jinja.NewInt(i), nil
		}
		f, err := t.Float64()
		return jinja.NewFloat(f), err
	case string:
		return jinja.NewString(t), nil
	case bool:
		return jinja.NewBool(t), nil
	case nil:
		return jinja.None(), nil
	}
	return jinja.Undefined(), fmt.Errorf("unexpected JSON token %v", tok)
}

// value converts a Go value for a template: json.RawMessage keeps its key
// order, Go maps are written in sorted key order.
func value(v any) (jinja.Value, error) {
	switch x := v.(type) {
	case json.RawMessage:
		return jsonValue(x)
	case []any:
		items := make([]jinja.Value, len(x))
		for i, e := range x {
			var err error
			if items[i], err = value(e); err != nil {
				return jinja.Undefined(), err
			}
		}
		return jinja.NewList(items), nil
	}
	return jinja.FromGoValue(v), nil
}

// templateValue is the message as a template sees it: as decoded from JSON
// (key order kept) when it was, with Role and Content as they are now.
func (m Message) templateValue() (jinja.Value, error) {
	if m.raw != nil {
		v, err := jsonValue(m.raw)
		if err != nil {
			return jinja.Undefined(), err
		}
		if v.IsDict() {
			v.AsDict().Set("role", jinja.NewString(m.Role))
			v.AsDict().Set("content", jinja.NewString(m.Content))
			return v, nil
		}
	}
	return jinja.FromGoValue(m.asMap()), nil
}
