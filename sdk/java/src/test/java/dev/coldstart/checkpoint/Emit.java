package dev.coldstart.checkpoint;

/**
 * {@code Emit PREFIX COUNT}: checkpoints PREFIX:begin, PREFIX:0:café .. PREFIX:COUNT-1:café,
 * PREFIX:end (used by sdk/test_all.sh and by the tests).
 */
public final class Emit {
  private Emit() {}

  public static void main(String[] args) {
    String prefix = args[0];
    int count = Integer.parseInt(args[1]);
    Checkpoint.checkpoint(prefix + ":begin");
    for (int i = 0; i < count; i++) {
      Checkpoint.checkpoint(prefix + ":" + i + ":café");
    }
    Checkpoint.checkpoint(prefix + ":end");
  }
}
