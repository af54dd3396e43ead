package tsc

// read returns the time-stamp counter (RDTSC).
func read() uint64

// cpuid executes CPUID with eax=leaf, ecx=0.
func cpuid(leaf uint32) (eax, ebx, ecx, edx uint32)

// invariant reports whether the CPU has an invariant TSC (CPUID
// 0x80000007 EDX bit 8: constant rate across P-, C- and T-states).
func invariant() bool {
	if max, _, _, _ := cpuid(0x80000000); max < 0x80000007 {
		return false
	}
	_, _, _, edx := cpuid(0x80000007)
	return edx&(1<<8) != 0
}
