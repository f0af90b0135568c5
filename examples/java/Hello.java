// The JVM's hello world: the smallest cold start a JVM can have (used by
// bench/trace_overhead.py to measure the tracer's cost on a JVM).
public class Hello {
    public static void main(String[] args) {
        System.out.println("hello");
    }
}
