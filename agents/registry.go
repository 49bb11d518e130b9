package agents

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/agenttrainer/agenttrainer/agents/dist"
	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/gpu"
)

// Spec describes a registered agent: everything the trainer, the config
// and the app know of it. Nothing outside the agent's package names it.
type Spec struct {
	Name        string
	Description string
	// Keys are the agent's config keys, in the [agent] section beside
	// agent.name (Key.Name "hidden" is agent.hidden): `agenttrainer
	// config`, the app's editor and config.toml show them, and they are
	// checked like every key. Agents may share a key (mlp and cnn share
	// agent.hidden) when they declare it alike.
	Keys []Key
	// New builds the agent.
	New func(Build) (Agent, error)
	// Distribution is the action distribution for an action space,
	// refusing spaces the agent cannot act in; nil: dist.For
	// (categorical for discrete actions, a diagonal Gaussian for a box).
	Distribution func(act envs.Space) (dist.Distribution, error)
	// Estimate is what the agent will cost on a workload, before anything
	// is built: the trainer checks memory with it and trainer.device=auto
	// weighs the work. nil: nothing (an agent without a network).
	Estimate func(Workload) Estimate
	// Requires says what the agent needs of a device that dev lacks (a
	// capability interface, as gpu.DirectConv is one), or nil; nil: any
	// device will do.
	Requires func(dev gpu.Device) error
	// Observes says which observations the agent plays (the app's picker
	// pairs environments and agents by it); zero: vectors and images, a
	// numeric agent's.
	Observes Observations
}

// Observations is a set of the kinds of observation an agent plays.
type Observations uint8

const (
	Vectors Observations = 1 << iota // a box of numbers
	Images                           // height × width × channels
	Text                             // words, from a text environment
)

// Plays returns the observations the agent declares, vectors and images
// when it declares none.
func (s Spec) Plays() Observations {
	if s.Observes == 0 {
		return Vectors | Images
	}
	return s.Observes
}

// Key declares one of an agent's config keys.
type Key struct {
	// Name within [agent]: "hidden" is agent.hidden.
	Name string
	// Default is the key's default value; its type is the key's type:
	// int64, float64, bool, string, []int, [][]int or []string.
	Default any
	// Doc is the comment config.toml shows above the key.
	Doc string
	// Check is the constraint in the config schema's words ("[1,64]",
	// ">0", ">=0", "oneof=tanh|relu", "each[1,65536]", "nonempty"), or,
	// with Validate, a description of the constraint for the editor.
	Check string
	// Validate checks a value of the key's type beyond Check's words; nil
	// for none.
	Validate func(v any) error
	// Live marks a key a running training may change.
	Live bool
}

// Config is the [agent] section's values by key name: what Build.Config
// and Workload.Config hold.
type Config map[string]any

// Ints is a []int key's value (nil when absent).
func (c Config) Ints(key string) []int { v, _ := c[key].([]int); return v }

// Layers is a [][]int key's value (nil when absent).
func (c Config) Layers(key string) [][]int { v, _ := c[key].([][]int); return v }

// String is a string key's value ("" when absent).
func (c Config) String(key string) string { v, _ := c[key].(string); return v }

// Float is a float key's value (0 when absent).
func (c Config) Float(key string) float64 { v, _ := c[key].(float64); return v }

// Int is an integer key's value (0 when absent).
func (c Config) Int(key string) int64 { v, _ := c[key].(int64); return v }

// Bool is a boolean key's value (false when absent).
func (c Config) Bool(key string) bool { v, _ := c[key].(bool); return v }

// Workload is what an agent's estimate is for.
type Workload struct {
	Obs, Act envs.Space
	Config   Config
	// Minibatch is the rows of a gradient step; Acting the rows of an
	// acting pass (env.num_envs).
	Minibatch, Acting int
	// Threads is the CPU device's cores (never 0).
	Threads  int
	NoCritic bool
}

// Estimate is an agent's cost on a workload.
type Estimate struct {
	// Params is the number of parameters: the trainer keeps them with
	// their gradients, Adam's two moments and, while a checkpoint is
	// written, host copies.
	Params float64
	// Widest is the largest weight matrix, in elements: a CPU device keeps
	// transposed copies of it.
	Widest float64
	// Weights names what the parameters are and how to have fewer, for a
	// message when they are what does not fit.
	Weights MemoryPart
	// Activations are the agent's buffers for a minibatch and for acting,
	// in bytes, each with what makes it smaller.
	Activations []MemoryPart
	// FLOPs is the floating-point work of the products of one sample's
	// update in one epoch: the forward pass, the weight gradients and the
	// input gradients, at 2 per multiply-add.
	FLOPs float64
}

// MemoryPart is one use of memory: what it is, what reduces it, its bytes.
type MemoryPart struct {
	Name, Fix string
	Bytes     float64
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Spec{}
	keys       []Key // every registered agent's, in registration order
	generation int   // counts registrations, for caches of the keys
)

// Register adds an agent to the registry: call it from an init function.
// It panics (a programming error) on a duplicate name, a missing
// constructor, or a key another agent declares otherwise.
func Register(s Spec) {
	if s.Name == "" || s.New == nil {
		panic("agents: Register needs a name and a constructor")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[s.Name]; dup {
		panic("agents: duplicate registration of " + s.Name)
	}
	for _, k := range s.Keys {
		if err := checkKey(k); err != nil {
			panic(fmt.Sprintf("agents: %s's key %q: %v", s.Name, k.Name, err))
		}
		i := slices.IndexFunc(keys, func(o Key) bool { return o.Name == k.Name })
		if i < 0 {
			keys = append(keys, k)
			continue
		}
		o := keys[i]
		if o.Doc != k.Doc || o.Check != k.Check || o.Live != k.Live || !reflect.DeepEqual(o.Default, k.Default) ||
			(o.Validate == nil) != (k.Validate == nil) {
			panic(fmt.Sprintf("agents: %s declares agent.%s otherwise than an agent registered before it", s.Name, k.Name))
		}
	}
	registry[s.Name] = s
	generation++
}

// checkKey refuses a declaration the config cannot hold.
func checkKey(k Key) error {
	if k.Name == "" || k.Name == "name" || strings.ContainsAny(k.Name, ". =\"\t") {
		return fmt.Errorf("not a usable key name")
	}
	switch k.Default.(type) {
	case int64, float64, bool, string, []int, [][]int, []string:
		return nil
	}
	return fmt.Errorf("default %v of type %T: use int64, float64, bool, string, []int, [][]int or []string", k.Default, k.Default)
}

// Keys lists every registered agent's config keys (shared ones once), in
// the order of registration; gen changes whenever the list may have.
func Keys() (list []Key, gen int) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return slices.Clone(keys), generation
}

// Defaults is the [agent] section as the registered agents declare it.
func Defaults() Config {
	ks, _ := Keys()
	c := Config{}
	for _, k := range ks {
		c[k.Name] = k.Default
	}
	return c
}

// Lookup returns a registered agent's spec.
func Lookup(name string) (Spec, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	s, ok := registry[name]
	return s, ok
}

// Names lists the registered agents in sorted order.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// New builds a registered agent: the keys b.Config lacks take the agent's
// defaults, and b.Dist, when nil, the agent's distribution.
func New(name string, b Build) (Agent, error) {
	s, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown agent %q (registered: %s)", name, strings.Join(Names(), ", "))
	}
	cfg := Config{}
	for _, k := range s.Keys {
		cfg[k.Name] = k.Default
	}
	for k, v := range b.Config {
		cfg[k] = v
	}
	b.Config = cfg
	if b.Dist == nil {
		d, err := s.NewDistribution(b.Act)
		if err != nil {
			return nil, err
		}
		b.Dist = d
	}
	if s.Requires != nil && b.Device != nil {
		if err := s.Requires(b.Device); err != nil {
			return nil, fmt.Errorf("%s cannot run on %s: %v", name, b.Device.Name(), err)
		}
	}
	return s.New(b)
}

// NewDistribution is the spec's action distribution for act.
func (s Spec) NewDistribution(act envs.Space) (dist.Distribution, error) {
	if s.Distribution != nil {
		return s.Distribution(act)
	}
	return dist.For(act)
}
