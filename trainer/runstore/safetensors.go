package runstore

import (
	"github.com/agenttrainer/agenttrainer/internal/inputfile"
	"github.com/agenttrainer/agenttrainer/internal/safetensors"
)

// Tensor is one float32 tensor bound for or read from a checkpoint.
type Tensor = safetensors.Tensor

// checkpointFormat is what a checkpoint holds: float32 tensors only.
var checkpointFormat = safetensors.Options{DTypes: []safetensors.DType{safetensors.F32}}

// EncodeSafetensors lays a checkpoint's tensors out in the safetensors
// format (internal/safetensors), as F32 in name order.
func EncodeSafetensors(tensors []Tensor, meta map[string]string) ([]byte, error) {
	return safetensors.Encode(tensors, meta)
}

// MaxCheckpoint bounds a checkpoint file read back (the memory estimate
// refuses networks whose checkpoints would come near it).
const MaxCheckpoint = 16 << 30

// ReadSafetensors reads a checkpoint file of F32 tensors, with every check
// of internal/safetensors made before anything is allocated for a tensor.
func ReadSafetensors(path string) (map[string]Tensor, map[string]string, error) {
	b, err := inputfile.Read(path, MaxCheckpoint, "checkpoint")
	if err != nil {
		return nil, nil, err
	}
	return DecodeSafetensors(b)
}

// DecodeSafetensors parses the bytes of a checkpoint, with the checks of
// ReadSafetensors.
func DecodeSafetensors(b []byte) (map[string]Tensor, map[string]string, error) {
	return safetensors.Decode(b, checkpointFormat)
}
