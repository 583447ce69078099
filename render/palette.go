package render

import (
	"image/color"

	"kinetoscope/analyze"
)

// rgb returns an opaque colour from a 0xRRGGBB value.
func rgb(v uint32) color.NRGBA {
	return color.NRGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

// BucketColor returns the fixed colour of a bucket, the same in every chart.
// The colours come from the Okabe-Ito and Paul Tol (muted) palettes, both
// designed to stay distinguishable for colour-blind readers: warm colours
// for communication, cool ones for compute, yellow and greys for memory
// and other. Unknown ids get a neutral grey.
func BucketColor(id analyze.BucketID) color.NRGBA {
	if v, ok := bucketHex[id]; ok {
		return rgb(v)
	}
	return rgb(0xBBBBBB)
}

// bucketHex holds each bucket's colour as 0xRRGGBB; it is read only.
var bucketHex = map[analyze.BucketID]uint32{
	analyze.AllReduce:     0xD55E00, // Okabe-Ito vermillion
	analyze.AllGather:     0x882255, // Tol wine
	analyze.ReduceScatter: 0xCC6677, // Tol rose
	analyze.AllToAll:      0xE69F00, // Okabe-Ito orange
	analyze.Broadcast:     0xCC79A7, // Okabe-Ito reddish purple
	analyze.SendRecv:      0xAA4499, // Tol purple
	analyze.CommOther:     0xDDCC77, // Tol sand
	analyze.MarlinGEMM:    0x0072B2, // Okabe-Ito blue
	analyze.GEMM:          0x332288, // Tol indigo
	analyze.Attention:     0x009E73, // Okabe-Ito bluish green
	analyze.MoERouting:    0x56B4E9, // Okabe-Ito sky blue
	analyze.Norm:          0x44AA99, // Tol teal
	analyze.Activation:    0x117733, // Tol green
	analyze.Elementwise:   0x88CCEE, // Tol cyan
	analyze.Embedding:     0x6699CC, // Tol medium blue
	analyze.Sampling:      0x999933, // Tol olive
	analyze.Memcpy:        0xF0E442, // Okabe-Ito yellow
	analyze.Memset:        0xDDDDDD, // Tol pale grey
	analyze.Other:         0x999999, // Okabe-Ito grey
}

// Colours of things that are not buckets, as 0xRRGGBB.
const (
	hexTransfer = 0xD55E00 // communication transfer (as AllReduce)
	hexWait     = 0xF4C7A6 // communication wait: a tint of it, hatched
	hexText     = 0x222222
	hexMuted    = 0x666666
	hexBand     = 0xF1F1F1 // background band of a group or prefill step
	hexUp       = 0xB2182B // a slower head in a diff
	hexDown     = 0x2166AC // a faster head in a diff
)

// tint mixes c with white; f is the share of white.
func tint(c color.NRGBA, f float64) color.NRGBA {
	mix := func(v uint8) uint8 { return uint8(float64(v) + (255-float64(v))*f) }
	return color.NRGBA{R: mix(c.R), G: mix(c.G), B: mix(c.B), A: 0xff}
}

// textOn returns black or white, whichever reads better on c.
func textOn(c color.NRGBA) color.NRGBA {
	l := 0.299*float64(c.R) + 0.587*float64(c.G) + 0.114*float64(c.B)
	if l > 150 {
		return rgb(0x000000)
	}
	return rgb(0xFFFFFF)
}
