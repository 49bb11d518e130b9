package runstore

import (
	"math"
	"reflect"
	"strings"
	"sync"
)

// The scalars of a metrics record by their JSON names, for tools that take a
// metric's name from the user (plot, charts): every field of Metrics is one.

var (
	fieldsOnce  sync.Once
	fieldNames  []string
	fieldByName map[string]int
)

func metricFields() {
	t := reflect.TypeOf(Metrics{})
	fieldByName = map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
		fieldNames = append(fieldNames, name)
		fieldByName[name] = i
	}
}

// MetricNames lists the JSON names of a metrics record's scalars in the
// record's order (iter, step, time_s, …, val_success_rate).
func MetricNames() []string {
	fieldsOnce.Do(metricFields)
	return append([]string(nil), fieldNames...)
}

// Value returns the scalar the record holds under a JSON name; ok is false
// for a name that is not one of MetricNames. An undefined value (null in
// the file, or a validation figure in a record without validation) is NaN.
func (m *Metrics) Value(name string) (v float64, ok bool) {
	fieldsOnce.Do(metricFields)
	i, ok := fieldByName[name]
	if !ok {
		return math.NaN(), false
	}
	f := reflect.ValueOf(m).Elem().Field(i)
	switch f.Kind() {
	case reflect.Int, reflect.Int64:
		return float64(f.Int()), true
	case reflect.Float64:
		return f.Float(), true
	case reflect.Pointer:
		if f.IsNil() {
			return math.NaN(), true
		}
		return f.Elem().Float(), true
	}
	return math.NaN(), true
}
