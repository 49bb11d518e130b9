package control

import "fmt"

// checkUID allows only the owner of the training.
func checkUID(peer, owner int) error {
	if peer != owner {
		return fmt.Errorf("%w (uid %d, not %d)", errOtherUser, peer, owner)
	}
	return nil
}
