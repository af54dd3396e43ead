package server

import (
	"fmt"

	"github.com/damselflydb/damselfly/shard/types"
)

// cloneObject deep-copies a collection value (COPY).
func cloneObject(o any) any {
	switch v := o.(type) {
	case *types.List:
		return v.Clone()
	case *types.Hash:
		return v.Clone()
	case *types.Set:
		return v.Clone()
	case *types.ZSet:
		return v.Clone()
	case *types.Stream:
		return v.Clone()
	}
	panic(fmt.Sprintf("cloneObject: value type %T cannot be copied", o))
}
