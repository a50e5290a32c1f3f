"""``make bench``: сколько стоит оценивание — таблица (:mod:`feedback.teacher.course.bench`)."""

from __future__ import annotations

import argparse
import sys

from feedback.teacher.course import bench


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Сколько стоит оценивание курса 7.")
    parser.add_argument("--cpu-lab", default="lab_7_2_training_flops")
    parser.add_argument(
        "--gpu-labs",
        default="lab_7_5_bfloat16_lora,lab_7_6_gradient_accumulation",
        help="GPU-лабораторные через запятую",
    )
    parser.add_argument(
        "--submissions", type=int, default=8, help="работ CPU-лабораторной (и класс вдвое больше)"
    )
    parser.add_argument("--gpu-submissions", type=int, default=3, help="то же для GPU-лабораторных")
    args = parser.parse_args(argv)
    gpu_labs = [lab for lab in args.gpu_labs.split(",") if lab]
    rows = bench.measure(args.cpu_lab, gpu_labs, args.submissions, args.gpu_submissions)
    print(bench.table(rows + bench.group_times()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
