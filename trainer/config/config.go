// Package config is agenttrainer's configuration: the schema (every key with
// its type, default, doc comment, constraint and whether it may change while
// a run trains), the documented defaults embedded from config.toml, and one
// code path that applies config files, command-line key=value overrides and
// Go maps or string slices of overrides, with errors that say how to fix them.
package config

import (
	_ "embed"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/agenttrainer/agenttrainer/agents"
	_ "github.com/agenttrainer/agenttrainer/agents/builtin" // every shipped agent's keys are in the schema
)

// defaultsTOML is a copy of the repository's config.toml (a test keeps the
// two identical): the defaults and the documentation of every key.
//
//go:embed defaults.toml
var defaultsTOML string

// Config is the whole configuration of a training run. Struct tags carry the
// schema: `toml` names the key, `live` marks keys a running training may
// change, `check` states the constraint on the value.
type Config struct {
	Env   EnvConfig   `toml:"env"`
	Data  DataConfig  `toml:"data"`
	Agent AgentConfig `toml:"agent"`
	PPO   PPOConfig   `toml:"ppo"`
	// The language-model sections (agent.name = "lm" on a text env.id):
	// their names are verl's, so its users find them where they expect.
	Rollout   RolloutConfig   `toml:"rollout"`
	Actor     ActorConfig     `toml:"actor"`
	Algorithm AlgorithmConfig `toml:"algorithm"`
	Critic    CriticConfig    `toml:"critic"`
	Trainer   TrainerConfig   `toml:"trainer"`
	SFT       SFTConfig       `toml:"sft"`
	Workflow  WorkflowConfig  `toml:"workflow"`
}

// WorkflowConfig chooses the text agent that plays a text environment in
// rLLM's multi-turn workflow, and its arguments (rLLM's agent_args).
type WorkflowConfig struct {
	Agent     string         `toml:"agent"`
	AgentArgs map[string]any `toml:"agent_args"`
}

// RolloutConfig is how a language model samples its episodes (verl's
// actor_rollout_ref.rollout).
type RolloutConfig struct {
	N           int     `toml:"n" check:"[1,4096]"`
	Temperature float64 `toml:"temperature" live:"" check:"[0,100]"`
	TopP        float64 `toml:"top_p" live:"" check:"[0,1]"`
	TopK        int     `toml:"top_k" live:"" check:"[0,1000000]"`
	MaxTurns    int     `toml:"max_turns" check:"[0,100000]"`
	MaxNumSeqs  int     `toml:"max_num_seqs" check:"[1,65536]"`
	TimeoutS    float64 `toml:"timeout_s" check:">=0"`
	ValN        int     `toml:"val_n" live:"" check:"[1,4096]"`
	ValTemp     float64 `toml:"val_temperature" live:"" check:"[0,100]"`
	// MaskTruncated masks episodes cut by max_response_length, max_turns
	// or the timeout (rLLM's overlong filter).
	MaskTruncated bool `toml:"mask_truncated" live:""`
}

// ActorConfig is the policy loss of language-model training (verl's
// actor_rollout_ref.actor).
type ActorConfig struct {
	ClipRatioLow  float64 `toml:"clip_ratio_low" live:"" check:"[0,1]"`
	ClipRatioHigh float64 `toml:"clip_ratio_high" live:"" check:">=0"`
	ClipRatioC    float64 `toml:"clip_ratio_c" live:"" check:"(1,1000]"`
	LossAggMode   string  `toml:"loss_agg_mode" live:"" check:"oneof=token-mean|seq-mean-token-mean|seq-mean-token-sum|seq-mean-token-sum-norm"`
	UseKLLoss     bool    `toml:"use_kl_loss"`
	KLLossCoef    float64 `toml:"kl_loss_coef" live:"" check:"[0,100]"`
	KLLossType    string  `toml:"kl_loss_type" live:"" check:"oneof=kl|k1|mse|k2|low_var_kl|k3"`
	EntropyCoeff  float64 `toml:"entropy_coeff" live:"" check:"[0,100]"`
	PPOEpochs     int     `toml:"ppo_epochs" live:"" check:"[1,1000]"`
	MiniBatchSize int     `toml:"ppo_mini_batch_size" live:"" check:"[0,1048576]"`
	MicroBatch    int     `toml:"ppo_micro_batch_size" check:"[1,65536]"`
}

// AlgorithmConfig is how language-model samples become advantages (verl's
// algorithm section).
type AlgorithmConfig struct {
	AdvEstimator     string  `toml:"adv_estimator" check:"oneof=grpo|drgrpo|rloo|reinforce_plus_plus_baseline|gae"`
	NormAdvByStd     bool    `toml:"norm_adv_by_std_in_grpo" live:""`
	StepwiseAdv      string  `toml:"stepwise_advantage" check:"oneof=broadcast|per_step"`
	UseKLInReward    bool    `toml:"use_kl_in_reward"`
	KLCoef           float64 `toml:"kl_coef" live:"" check:"[0,100]"`
	KLPenalty        string  `toml:"kl_penalty" live:"" check:"oneof=kl|k1|mse|k2|low_var_kl|k3"`
	FilterGroups     bool    `toml:"filter_groups" live:""`
	MaxNumGenBatches int     `toml:"max_num_gen_batches" live:"" check:"[0,1000]"`
	// GAE's discount and λ over the response tokens (adv_estimator = gae).
	Gamma float64 `toml:"gamma" live:"" check:"[0,1]"`
	Lam   float64 `toml:"lam" live:"" check:"[0,1]"`
}

// CriticConfig is the value head of language-model PPO (adv_estimator =
// gae; verl's critic section): a linear layer on the policy's trunk.
type CriticConfig struct {
	CliprangeValue float64 `toml:"cliprange_value" live:"" check:"[0,1000]"`
	LossAggMode    string  `toml:"loss_agg_mode" live:"" check:"oneof=token-mean|seq-mean-token-mean|seq-mean-token-sum|seq-mean-token-sum-norm"`
	VFCoef         float64 `toml:"vf_coef" live:"" check:"(0,100]"`
	LR             float64 `toml:"lr" live:"" check:"[0,1]"`
}

// LM reports whether the config trains a language model.
func (c *Config) LM() bool { return c.Agent.Name == LMAgent }

// LMAgent is the language-model agent's registered name.
const LMAgent = "lm"

// DataConfig names task datasets: each row builds one environment.
type DataConfig struct {
	TrainFiles []string `toml:"train_files"`
	ValFiles   []string `toml:"val_files"`
	// The language-model trainer's batch and lengths (verl's names).
	TrainBatchSize    int `toml:"train_batch_size" check:"[1,1048576]"`
	ValBatchSize      int `toml:"val_batch_size" check:"[0,1048576]"`
	MaxPromptLength   int `toml:"max_prompt_length" check:"[1,1048576]"`
	MaxResponseLength int `toml:"max_response_length" check:"[1,1048576]"`
}

// Grouped reports whether advantages compare episodes within groups of the
// same task (GRPO, RLOO) instead of using a critic (GAE).
func (c *Config) Grouped() bool { return c.PPO.AdvEstimator != "gae" }

// EnvConfig chooses and parameterises the environment.
type EnvConfig struct {
	ID              string         `toml:"id" check:"nonempty"`
	NumEnvs         int            `toml:"num_envs" check:"[1,1048576]"`
	Args            map[string]any `toml:"args"`
	NormalizeObs    bool           `toml:"normalize_obs"`
	ClipObs         float64        `toml:"clip_obs" check:">0"`
	NormalizeReward bool           `toml:"normalize_reward"`
	ClipReward      float64        `toml:"clip_reward" check:">0"`
}

// AgentConfig chooses the agent. The rest of the [agent] section is the
// keys the registered agents declare (agents.Spec.Keys): Params holds their
// values by name ("hidden" for agent.hidden), of the declared types.
type AgentConfig struct {
	Name   string        `toml:"name" check:"nonempty"`
	Params agents.Config `toml:"-"`
}

// PPOConfig holds the algorithm's hyperparameters (CleanRL's names).
type PPOConfig struct {
	TotalTimesteps int64   `toml:"total_timesteps" live:"" check:">0"`
	NumSteps       int     `toml:"num_steps" check:"[1,1048576]"`
	LearningRate   float64 `toml:"learning_rate" live:"" check:"(0,1]"`
	AnnealLR       bool    `toml:"anneal_lr" live:""`
	Gamma          float64 `toml:"gamma" live:"" check:"[0,1]"`
	GAELambda      float64 `toml:"gae_lambda" live:"" check:"[0,1]"`
	NumMinibatches int     `toml:"num_minibatches" live:"" check:"[1,1048576]"`
	UpdateEpochs   int     `toml:"update_epochs" live:"" check:"[1,10000]"`
	NormAdv        bool    `toml:"norm_adv" live:""`
	ClipCoef       float64 `toml:"clip_coef" live:"" check:">0"`
	ClipVLoss      bool    `toml:"clip_vloss" live:""`
	EntCoef        float64 `toml:"ent_coef" live:"" check:">=0"` // at most MaxLossCoef (Validate)
	VFCoef         float64 `toml:"vf_coef" live:"" check:">=0"`  // at most MaxLossCoef (Validate)
	MaxGradNorm    float64 `toml:"max_grad_norm" live:"" check:">0"`
	TargetKL       float64 `toml:"target_kl" live:"" check:">=0"`
	AdvEstimator   string  `toml:"adv_estimator" check:"oneof=gae|grpo|rloo"`
	GroupSize      int     `toml:"group_size" check:"[1,65536]"`
}

// TrainerConfig holds everything about a run that is not the algorithm.
type TrainerConfig struct {
	Seed        int64   `toml:"seed" check:">=0"`
	Device      string  `toml:"device" check:"device"`
	Threads     int     `toml:"threads" check:"[0,1024]"`
	Name        string  `toml:"name" check:"name"`
	RunsDir     string  `toml:"runs_dir" check:"nonempty"`
	SaveFreq    int     `toml:"save_freq" live:"" check:">=0"`
	SaveEveryS  float64 `toml:"save_interval_s" live:"" check:">=0"`
	LogEvery    int64   `toml:"log_every_steps" live:"" check:">=0"`
	Keep        int     `toml:"keep_checkpoints" live:"" check:">=0"`
	TensorBoard bool    `toml:"tensorboard"`
	TestFreq    int     `toml:"test_freq" live:"" check:">=0"`
	ValGreedy   bool    `toml:"val_deterministic" live:""`
	// Language-model runs count iterations (verl's global steps).
	TotalTrainingSteps int `toml:"total_training_steps" live:"" check:"[1,100000000]"`
	TranscriptGroups   int `toml:"transcript_groups" live:"" check:"[0,1000000]"`
}

// BatchSize is the number of samples per update.
func (c *Config) BatchSize() int { return c.Env.NumEnvs * c.PPO.NumSteps }

// MinibatchSize is the number of samples per gradient step.
func (c *Config) MinibatchSize() int { return c.BatchSize() / c.PPO.NumMinibatches }

// Key describes one configuration key.
type Key struct {
	Name    string // dot notation, e.g. "ppo.learning_rate"
	Type    string // "int", "float", "bool", "string", "[]int", "[][]int", "table"
	Default any    // the value from the embedded defaults
	Doc     string // the comment above the key in config.toml
	Live    bool   // may change while a run trains
	Check   string // the constraint, as written in the struct tag or the agent's declaration

	index    []int             // reflect field path from Config; nil for an agent's key
	agentKey string            // an agent's key: its name in AgentConfig.Params
	validate func(v any) error // an agent's own check beyond Check
}

var (
	schemaMu   sync.Mutex
	schemaGen  = -1 // the agents registry's generation the schema was made for
	schema     []Key
	schemaByID map[string]int
	defaults   Config
	schemaErr  error
)

// loadSchema makes the schema from Config's struct tags and the registered
// agents' keys, which follow agent.name, and the defaults from the embedded
// config.toml over the agents' declared defaults.
func loadSchema(agentKeys []agents.Key) {
	docs := parseDocs(defaultsTOML)
	t := reflect.TypeOf(Config{})
	schema, schemaByID, schemaErr = nil, map[string]int{}, nil
	add := func(k Key) {
		schemaByID[k.Name] = len(schema)
		schema = append(schema, k)
	}
	for i := 0; i < t.NumField(); i++ {
		sec := t.Field(i)
		for j := 0; j < sec.Type.NumField(); j++ {
			f := sec.Type.Field(j)
			if f.Tag.Get("toml") == "-" {
				continue
			}
			k := Key{
				Name:  sec.Tag.Get("toml") + "." + f.Tag.Get("toml"),
				Type:  typeName(f.Type),
				Check: f.Tag.Get("check"),
				index: []int{i, j},
			}
			_, k.Live = f.Tag.Lookup("live")
			k.Doc = docs[k.Name]
			add(k)
			if k.Name == "agent.name" {
				for _, ak := range agentKeys {
					add(Key{Name: "agent." + ak.Name, Type: typeName(reflect.TypeOf(ak.Default)), Default: ak.Default,
						Doc: ak.Doc, Live: ak.Live, Check: ak.Check, agentKey: ak.Name, validate: ak.Validate})
				}
			}
		}
	}
	var err error
	defaults, err = decodeDefaults()
	if err != nil {
		schemaErr = fmt.Errorf("embedded defaults: %w", err)
		return
	}
	for i := range schema {
		schema[i].Default = defaults.value(schema[i])
	}
}

func decodeDefaults() (Config, error) {
	var c Config
	md, err := toml.Decode(defaultsTOML, &c)
	if err != nil {
		return c, err
	}
	c.Agent.Params = agents.Config{}
	for _, k := range schema {
		if k.agentKey != "" {
			c.Agent.Params[k.agentKey] = cloneValue(k.Default)
		}
	}
	// env.args is a free-form table and the agents' keys are set below;
	// anything else undecoded is a bug.
	var doc map[string]any
	if _, err := toml.Decode(defaultsTOML, &doc); err != nil {
		return c, err
	}
	agentSec, _ := doc["agent"].(map[string]any)
	for _, k := range md.Undecoded() {
		name := k.String()
		switch i, ok := schemaByID[name]; {
		case tableKey(name) != "":
		case ok && schema[i].agentKey != "":
			if err := c.setKey(schema[i], normalize(agentSec[schema[i].agentKey])); err != nil {
				return c, fmt.Errorf("%s: %s", name, err)
			}
		default:
			return c, fmt.Errorf("key %s is not in the schema", k)
		}
	}
	if c.Env.Args == nil {
		c.Env.Args = map[string]any{}
	}
	if c.Workflow.AgentArgs == nil {
		c.Workflow.AgentArgs = map[string]any{}
	}
	return c, nil
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "int"
	case reflect.Float64:
		return "float"
	case reflect.Bool:
		return "bool"
	case reflect.String:
		return "string"
	case reflect.Slice:
		return "[]" + typeName(t.Elem())
	case reflect.Map:
		return "table"
	}
	panic("config: unsupported field type " + t.String())
}

// parseDocs maps each key of a commented TOML file to the comment lines
// directly above it.
func parseDocs(src string) map[string]string {
	docs := map[string]string{}
	section := ""
	var comment []string
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "#"):
			comment = append(comment, strings.TrimSpace(strings.TrimPrefix(line, "#")))
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
			comment = nil
		case strings.Contains(line, "="):
			name := strings.TrimSpace(line[:strings.Index(line, "=")])
			docs[section+"."+name] = strings.Join(comment, " ")
			comment = nil
		default:
			comment = nil
		}
	}
	return docs
}

// Schema returns every key in file order, the registered agents' keys
// after agent.name.
func Schema() []Key {
	mustSchema()
	schemaMu.Lock()
	defer schemaMu.Unlock()
	return append([]Key(nil), schema...)
}

// Lookup returns the schema entry of a key.
func Lookup(name string) (Key, bool) {
	mustSchema()
	schemaMu.Lock()
	defer schemaMu.Unlock()
	i, ok := schemaByID[name]
	if !ok {
		return Key{}, false
	}
	return schema[i], true
}

// mustSchema makes the schema, again when an agent registered since.
func mustSchema() {
	keys, gen := agents.Keys()
	schemaMu.Lock()
	if gen != schemaGen {
		loadSchema(keys)
		schemaGen = gen
	}
	err := schemaErr
	schemaMu.Unlock()
	if err != nil {
		panic(err) // the embedded file is part of the program
	}
}

// Default returns the embedded defaults.
func Default() Config {
	mustSchema()
	schemaMu.Lock()
	defer schemaMu.Unlock()
	return defaults.Clone()
}

// DefaultsTOML is the embedded, commented defaults file.
func DefaultsTOML() string { return defaultsTOML }

// Clone returns a deep copy.
func (c Config) Clone() Config {
	out := c
	out.Agent.Params = make(agents.Config, len(c.Agent.Params))
	for k, v := range c.Agent.Params {
		out.Agent.Params[k] = cloneValue(v)
	}
	out.Data.TrainFiles = append([]string(nil), c.Data.TrainFiles...)
	out.Data.ValFiles = append([]string(nil), c.Data.ValFiles...)
	out.Env.Args = cloneTable(c.Env.Args)
	out.Workflow.AgentArgs = cloneTable(c.Workflow.AgentArgs)
	return out
}

func cloneTable(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = cloneTable(sub)
		}
		out[k] = v
	}
	return out
}

// cloneValue copies a key's value deeply (its lists).
func cloneValue(v any) any {
	switch x := v.(type) {
	case []int:
		return append([]int(nil), x...)
	case []string:
		return append([]string(nil), x...)
	case [][]int:
		out := make([][]int, len(x))
		for i, l := range x {
			out[i] = append([]int(nil), l...)
		}
		return out
	case map[string]any:
		return cloneTable(x)
	}
	return v
}

// Get returns the value of a key.
func (c *Config) Get(name string) (any, error) {
	k, ok := Lookup(name)
	if !ok {
		return nil, unknownKeyError(name)
	}
	return c.value(k), nil
}

// value is k's value in c (an agent's key's default when c lacks it).
func (c *Config) value(k Key) any {
	if k.agentKey != "" {
		if v, ok := c.Agent.Params[k.agentKey]; ok {
			return v
		}
		return k.Default
	}
	return reflect.ValueOf(c).Elem().FieldByIndex(k.index).Interface()
}

// TOML renders the config as a TOML document: its sections in order, each
// key as the schema lists it (the agents' keys after agent.name).
func (c Config) TOML() string {
	var b strings.Builder
	if err := toml.NewEncoder(&b).Encode(c.document()); err != nil {
		return fmt.Sprintf("# cannot encode config: %v\n", err)
	}
	return b.String()
}

// document is c as a struct the TOML encoder writes in the schema's order:
// Config itself, with the [agent] section a struct made for the keys of the
// registered agents.
func (c Config) document() any {
	keys := Schema()
	var agentFields []reflect.StructField
	var agentValues []any
	for _, k := range keys {
		if strings.HasPrefix(k.Name, "agent.") {
			v := c.value(k)
			agentFields = append(agentFields, reflect.StructField{Name: fmt.Sprintf("F%d", len(agentFields)),
				Type: reflect.TypeOf(v), Tag: reflect.StructTag(fmt.Sprintf("toml:%q", strings.TrimPrefix(k.Name, "agent.")))})
			agentValues = append(agentValues, v)
		}
	}
	agent := reflect.New(reflect.StructOf(agentFields)).Elem()
	for i, v := range agentValues {
		agent.Field(i).Set(reflect.ValueOf(v))
	}
	t := reflect.TypeOf(c)
	var fields []reflect.StructField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Name == "Agent" {
			f.Type = agent.Type()
		}
		fields = append(fields, f)
	}
	doc := reflect.New(reflect.StructOf(fields)).Elem()
	v := reflect.ValueOf(c)
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Name == "Agent" {
			doc.Field(i).Set(agent)
		} else {
			doc.Field(i).Set(v.Field(i))
		}
	}
	return doc.Interface()
}

// FormatValue renders a value the way it would be written in TOML.
func FormatValue(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case []int:
		parts := make([]string, len(x))
		for i, n := range x {
			parts[i] = fmt.Sprint(n)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case [][]int:
		parts := make([]string, len(x))
		for i, l := range x {
			parts[i] = FormatValue(l)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []string:
		parts := make([]string, len(x))
		for i, s := range x {
			parts[i] = fmt.Sprintf("%q", s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		if len(x) == 0 {
			return "{}"
		}
		var b strings.Builder
		if err := toml.NewEncoder(&b).Encode(map[string]any{"v": x}); err != nil {
			return fmt.Sprint(x)
		}
		return strings.TrimSpace(strings.TrimPrefix(b.String(), "[v]"))
	case float64:
		return formatFloat(x)
	}
	return fmt.Sprint(v)
}

func formatFloat(f float64) string {
	s := fmt.Sprint(f)
	if !strings.ContainsAny(s, ".eEn") { // keep floats recognisable as floats
		s += ".0"
	}
	return s
}
