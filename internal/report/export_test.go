package report

// ResampleMoments draws reps replicates of the multinomial resampler over
// the weights and returns each cell's mean and variance; it panics if a
// replicate does not keep the total.
func ResampleMoments(weights []int, reps int, seed uint64) [][2]float64 {
	m := newMultinomial(weights, seed)
	counts := make([]int, len(weights))
	sum := make([]float64, len(weights))
	sq := make([]float64, len(weights))
	for range reps {
		m.draw(counts)
		total := 0
		for i, c := range counts {
			total += c
			sum[i] += float64(c)
			sq[i] += float64(c) * float64(c)
		}
		if total != m.n {
			panic("a replicate lost items")
		}
	}
	out := make([][2]float64, len(weights))
	for i := range out {
		mean := sum[i] / float64(reps)
		out[i] = [2]float64{mean, sq[i]/float64(reps) - mean*mean}
	}
	return out
}
