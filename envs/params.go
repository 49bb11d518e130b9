package envs

// Int reads an integer argument (any Go integer, or a float without a
// fractional part, as JSON and CSV files give them), or def when absent.
func (p Params) Int(key string, def int64) (int64, error) { return intArg(p, key, def) }

// Float reads a number argument, or def when absent.
func (p Params) Float(key string, def float64) (float64, error) { return floatArg(p, key, def) }

// Bool reads a true/false argument (also 1/0 and their strings), or def.
func (p Params) Bool(key string, def bool) (bool, error) { return boolArg(p, key, def) }

// String reads a string argument, or def when absent.
func (p Params) String(key, def string) (string, error) { return stringArg(p, key, def) }
