package hostile

import (
	"fmt"
)

// lmTrainCases are language-model trainings asked for badly (issue 27):
// an lm agent on a numeric environment and a numeric agent on a text one,
// model directories and tokenizers that are not, sizes that do not fit
// together, prompts over the model's context. Each is exit 2 naming the key,
// with no run directory made.
func lmTrainCases() []hcase {
	lm := []string{"agent.name=lm", "env.id=TextFrozenLake-v0"}
	cases := []struct {
		name  string
		wants []string
		args  []string
	}{
		{"lm agent on a numeric env", []string{"env.id", "text environments"}, []string{"agent.name=lm", "env.id=CartPole-v1"}},
		{"numeric agent on a text env", []string{"agent.name", "language model"}, []string{"agent.name=mlp", "env.id=TextFrozenLake-v0"}},
		{"model dir that does not exist", []string{"agent.model"}, append(lm, "agent.model=/nonexistent/model")},
		{"model dir that is a file", []string{"agent.model"}, append(lm, "agent.model=/etc/hostname")},
		{"tokenizer dir that is not one", []string{"agent.vocab"}, append(lm, "agent.vocab=/tmp")},
		{"hidden size not a multiple of the heads", []string{"agent.hidden_size"}, append(lm, "agent.hidden_size=30", "agent.num_attention_heads=4")},
		{"kv heads that do not divide the heads", []string{"agent.num_key_value_heads"}, append(lm, "agent.num_key_value_heads=3")},
		{"prompt and response over the context", []string{"data.max_prompt_length", "context"}, append(lm, "data.max_prompt_length=8000")},
		{"unknown loss_agg_mode", []string{"actor.loss_agg_mode"}, append(lm, "actor.loss_agg_mode=sum")},
		{"gae for a language model", []string{"algorithm.adv_estimator"}, append(lm, "algorithm.adv_estimator=gae")},
		{"a dual clip of 1", []string{"actor.clip_ratio_c"}, append(lm, "actor.clip_ratio_c=1")},
		{"a huge model", []string{"agent"}, append(lm, "agent.hidden_size=65536", "agent.num_hidden_layers=256", "agent.intermediate_size=1048576")},
		{"chatml without its tokens", []string{"agent.chat_format"}, append(lm, "agent.chat_format=llama3")},
	}
	var cs []hcase
	for i, k := range cases {
		k := k
		cs = append(cs, hcase{
			name:   fmt.Sprintf("lm/train %s", k.name),
			expect: "exit 2 naming " + k.wants[0] + ", nothing written",
			fast:   i < 2,
			run:    func(c *cx) { refused(c, k.wants, append(k.args, "trainer.total_training_steps=1")...) },
		})
	}
	return cs
}
