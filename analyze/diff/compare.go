package diff

import (
	"errors"

	"kinetoscope/analyze"
)

// compare is filled in by the implementation that follows the contract.
func compare(base, head *analyze.Report, opt Options) (*Diff, error) {
	if base == nil || head == nil {
		return nil, errors.New("diff: nil report")
	}
	return nil, errors.New("diff: not implemented yet")
}
