package main

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"regexp"
	"strconv"
)

var number = regexp.MustCompile(`-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?`)

func last(s string) (float64, bool) {
	all := number.FindAllString(s, -1)
	if len(all) == 0 {
		return 0, false
	}
	x, err := strconv.ParseFloat(all[len(all)-1], 64)
	return x, err == nil
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<16), 1<<24)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var row struct {
			ID       int     `json:"id"`
			Response string  `json:"response"`
			Answer   *string `json:"answer"`
		}
		if err := json.Unmarshal(in.Bytes(), &row); err != nil {
			os.Stderr.WriteString("numeric: " + err.Error() + "\n")
			os.Exit(2)
		}
		v := map[string]any{"id": row.ID, "answer_key": nil}
		x, ok := last(row.Response)
		if ok {
			v["answer_key"] = strconv.FormatFloat(x, 'g', 6, 64)
		}
		if row.Answer != nil {
			y, yok := last(*row.Answer)
			v["correct"] = ok && yok && math.Abs(x-y) <= 1e-6*math.Max(1, math.Abs(y))
		}
		out.Encode(v)
	}
}
