package server

// cloneObject deep-copies a collection value (COPY).
func cloneObject(o any) any {
	if cl, ok := o.(interface{ CloneValue() any }); ok {
		return cl.CloneValue()
	}
	panic("cloneObject: value type cannot be copied")
}
