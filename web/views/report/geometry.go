package report

import (
	"fmt"
	"unicode/utf8"
)

// The heatmaps' geometry, in SVG user units (pixels at 100%).
const (
	cellSize = 52
	rowHead  = 150 // room for the row labels
	colLabel = 14  // characters of a column label shown
)

// colHead is the room above the grid for the slanted column labels: as
// much as the longest needs.
func colHead(h Heatmap) int {
	n := 0
	for _, c := range h.Cols {
		n = max(n, min(colLabel, utf8.RuneCountInString(c)))
	}
	return 30 + 5*n
}

func svgWidth(h Heatmap) string  { return fmt.Sprint(rowHead + cellSize*len(h.Cols) + 8) }
func svgHeight(h Heatmap) string { return fmt.Sprint(colHead(h) + cellSize*len(h.Rows) + 8) }
func viewBox(h Heatmap) string   { return "0 0 " + svgWidth(h) + " " + svgHeight(h) }

func cellX(j int) string                { return fmt.Sprint(rowHead + j*cellSize) }
func cellY(h Heatmap, i int) string     { return fmt.Sprint(colHead(h) + i*cellSize) }
func textX(j int) string                { return fmt.Sprint(rowHead + j*cellSize + cellSize/2) }
func textY(h Heatmap, i int) string     { return fmt.Sprint(colHead(h) + i*cellSize + cellSize/2 + 5) }
func rowLabelX() string                 { return fmt.Sprint(rowHead - 8) }
func side() string                      { return fmt.Sprint(cellSize - 2) }
func rowLabelY(h Heatmap, i int) string { return textY(h, i) }

// colLabelTransform places a column label at the top of its column,
// slanted so that long names fit.
func colLabelTransform(h Heatmap, j int) string {
	x, y := rowHead+j*cellSize+cellSize/2, colHead(h)-8
	return fmt.Sprintf("translate(%d %d) rotate(-40)", x, y)
}

// short cuts a label to fit its room; the full text is in the cell's title.
func short(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
