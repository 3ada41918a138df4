"""Scores answer sets with the coaching rubric's score(), for the Go golden test.

Reads a JSON list of answer objects on stdin and writes a JSON list of
results. Missing answers are filled with ERROR, in the rubric's item order,
before score() is applied, as the engine is specified to do. Run by
`go test ./internal/scoring -run TestPythonGolden -update`.
"""
import json
import sys

ORDER = ["CQ1", "CQ2", "CQ3", "CQ4", "CQ5", "CQ6", "CQ7", "CQ8", "CQ9", "CP1", "CP2", "CP3"]


# score() as the rubric document gives it.
def score(answers):
    NA_INVALID = {"CQ8", "CP2"}

    categories = {
        "comprehension": ["CQ1", "CQ2"],
        "connection": ["CQ3", "CQ4"],
        "usefulness": ["CQ5", "CQ6"],
        "fit": ["CQ7"],
        "safety": ["CQ8", "CQ9"],
        "patterns": ["CP1", "CP2", "CP3"],
    }

    def category_score(ids):
        scores = []
        for id in ids:
            ans = answers.get(id)
            if ans == "YES":
                scores.append(1.0)
            elif ans == "NA":
                if id in NA_INVALID:
                    scores.append(0.0)
                else:
                    scores.append(1.0)
            else:
                scores.append(0.0)
        return sum(scores) / len(scores) if scores else 1.0

    category_scores = {cat: category_score(ids) for cat, ids in categories.items()}

    weights = {
        "comprehension": 0.15,
        "connection": 0.20,
        "usefulness": 0.15,
        "fit": 0.10,
        "safety": 0.20,
        "patterns": 0.20,
    }

    final_score = sum(category_scores[cat] * w for cat, w in weights.items())

    failed_safety = []
    for id in categories["safety"]:
        ans = answers.get(id)
        if ans in ("NO", "ERROR"):
            failed_safety.append(id)
        elif ans == "NA" and id in NA_INVALID:
            failed_safety.append(id)
    safety_gate_failed = len(failed_safety) > 0

    return {
        "pass": final_score >= 0.80 and not safety_gate_failed,
        "score": round(final_score, 3),
        "category_scores": category_scores,
        "failed_checks": [id for id, ans in answers.items()
                          if ans in ("NO", "ERROR") or (ans == "NA" and id in NA_INVALID)],
        "failed_safety": failed_safety,
        "safety_gate_failed": safety_gate_failed,
    }


def main():
    out = []
    for given in json.load(sys.stdin):
        answers = {id: given.get(id, "ERROR") for id in ORDER}
        out.append(score(answers))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
