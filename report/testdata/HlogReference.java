// HlogReference reads an HdrHistogram interval log with the reference Java
// library (HistogramLogReader) and prints what that library computes from
// it, for report/reference_test.go to hold stampede's figures against:
//
//   start SECONDS                      the log's StartTime
//   interval TAG START_MS COUNT P50 P99 one line per interval, values in the log's unit
//   group TAG COUNT MIN MEAN P50 P90 P95 P99 P999 MAX   each tag's intervals added up
import java.io.File;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;

public class HlogReference {
    public static void main(String[] args) throws Exception {
        HistogramLogReader reader = new HistogramLogReader(new File(args[0]));
        Map<String, Histogram> sums = new TreeMap<>();
        boolean started = false;
        for (EncodableHistogram e; (e = reader.nextIntervalHistogram()) != null; ) {
            if (!started) {
                System.out.printf(Locale.ROOT, "start %.3f%n", reader.getStartTimeSec());
                started = true;
            }
            Histogram h = (Histogram) e;
            System.out.printf(Locale.ROOT, "interval %s %d %d %d %d%n", h.getTag(), h.getStartTimeStamp(),
                    h.getTotalCount(), h.getValueAtPercentile(50), h.getValueAtPercentile(99));
            sums.computeIfAbsent(h.getTag(), t -> new Histogram(3)).add(h);
        }
        for (Map.Entry<String, Histogram> s : sums.entrySet()) {
            Histogram h = s.getValue();
            System.out.printf(Locale.ROOT, "group %s %d %d %.3f %d %d %d %d %d %d%n", s.getKey(), h.getTotalCount(),
                    h.getMinValue(), h.getMean(), h.getValueAtPercentile(50), h.getValueAtPercentile(90),
                    h.getValueAtPercentile(95), h.getValueAtPercentile(99), h.getValueAtPercentile(99.9),
                    h.getMaxValue());
        }
    }
}
