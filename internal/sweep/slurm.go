package sweep

import (
	"context"
	"errors"
)

func (sw *Sweep) runSlurm(ctx context.Context) error {
	return errors.New("the slurm backend is not built yet")
}
