#include "tools/timeline.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ingot::tools {

std::vector<TimelineSlice> predict_timeline(const ingot_module_t& m, const std::vector<ingot_step_work_t>& work) {
  auto time = [](float t) { return std::isfinite(t) && t > 0 ? static_cast<double>(t) : 0.0; };
  std::vector<TimelineSlice> out;
  for (uint32_t w = 0; w < m.plan->worker_count; ++w) {
    const ingot_worker_t& list = m.workers[w];
    for (uint32_t i = 0; i < list.step_count; ++i) {
      const uint32_t s = list.step_first + i;
      const uint16_t kind = m.steps[s].kind;
      if ((kind != INGOT_STEP_DISPATCH && kind != INGOT_STEP_COPY) || s >= work.size()) continue;
      const double start = time(work[s].start_us);
      out.push_back({s, w, start, std::max(start, time(work[s].finish_us))});
    }
  }
  return out;
}

namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default:
        out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
    }
  }
  return out;
}

}  // namespace

std::string timeline_svg(const ingot_module_t& m, const std::vector<TimelineSlice>& slices,
                         const std::vector<std::string>& labels, const std::string& title) {
  const uint32_t W = m.plan->worker_count;
  double end = 1e-9;
  for (const TimelineSlice& s : slices) end = std::max(end, s.finish_us);
  const double left = 90, right = 20, top = 50, row = 46, width = 1100;
  const double scale = (width - left - right) / end;
  const double height = top + row * W + 50;
  static const char* palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{:.0f}\" y=\"22\" font-size=\"14\">{}</text>\n",
      width, height, left, xml_escape(title));
  for (uint32_t w = 0; w < W; ++w) {
    const double y = top + w * row;
    svg += fmt::format("<text x=\"8\" y=\"{:.1f}\">worker {}</text>\n", y + row / 2 + 4, w);
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", left,
                       y + row - 4, width - right, y + row - 4);
  }
  for (const TimelineSlice& s : slices) {
    const double x = left + s.start_us * scale, w = std::max(0.5, (s.finish_us - s.start_us) * scale);
    const double y = top + s.worker * row + 4;
    const std::string label = s.step < labels.size() && !labels[s.step].empty() ? labels[s.step] : fmt::format("step {}", s.step);
    svg += fmt::format(
        "<rect x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\" stroke=\"white\" "
        "stroke-width=\"0.5\"><title>{} ({:.1f} us)</title></rect>\n",
        x, y, w, row - 12, palette[s.step % 8], xml_escape(label), s.finish_us - s.start_us);
  }
  // Sync points: a tick where each WAIT lets its worker go on.
  for (uint32_t w = 0; w < W; ++w) {
    double t = 0;
    for (uint32_t i = 0; i < m.workers[w].step_count; ++i) {
      const uint32_t s = m.workers[w].step_first + i;
      if (m.steps[s].kind == INGOT_STEP_WAIT) {
        for (const TimelineSlice& sl : slices)
          if (sl.worker == w && sl.step > s) {
            t = sl.start_us;
            break;
          }
        const double x = left + t * scale, y = top + w * row;
        svg += fmt::format("<line x1=\"{:.2f}\" y1=\"{:.1f}\" x2=\"{:.2f}\" y2=\"{:.1f}\" stroke=\"black\" "
                           "stroke-width=\"1.5\"/>\n", x, y, x, y + row - 6);
      }
    }
  }
  // Time axis.
  const double axis_y = top + row * W + 10;
  svg += fmt::format("<line x1=\"{:.0f}\" y1=\"{:.1f}\" x2=\"{:.0f}\" y2=\"{:.1f}\" stroke=\"black\"/>\n", left, axis_y,
                     width - right, axis_y);
  for (int k = 0; k <= 5; ++k) {
    const double t = end * k / 5, x = left + t * scale;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{:.0f} us</text>\n", x, axis_y + 16, t);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace ingot::tools
