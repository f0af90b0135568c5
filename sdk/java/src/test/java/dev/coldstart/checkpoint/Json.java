package dev.coldstart.checkpoint;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON reader for the tests (the SDK has no dependencies, and its tests only JUnit).
 * Objects become {@code Map<String, Object>}, arrays {@code List<Object>}, numbers {@code Double};
 * {@code \\u} escapes are kept as UTF-16 code units, so unpaired surrogates survive.
 */
final class Json {
  private final String s;
  private int i;

  private Json(String s) {
    this.s = s;
  }

  static Object parse(String text) {
    Json p = new Json(text);
    Object v = p.value();
    p.ws();
    if (p.i != text.length()) {
      throw new IllegalArgumentException("trailing data at " + p.i);
    }
    return v;
  }

  private void ws() {
    while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
      i++;
    }
  }

  private boolean eat(String lit) {
    if (s.startsWith(lit, i)) {
      i += lit.length();
      return true;
    }
    return false;
  }

  private Object value() {
    ws();
    char c = s.charAt(i);
    if (c == '"') {
      return string();
    }
    if (c == '[') {
      i++;
      List<Object> list = new ArrayList<>();
      ws();
      if (eat("]")) {
        return list;
      }
      do {
        list.add(value());
        ws();
      } while (eat(","));
      expect("]");
      return list;
    }
    if (c == '{') {
      i++;
      Map<String, Object> map = new LinkedHashMap<>();
      ws();
      if (eat("}")) {
        return map;
      }
      do {
        ws();
        String k = string();
        ws();
        expect(":");
        map.put(k, value());
        ws();
      } while (eat(","));
      expect("}");
      return map;
    }
    if (eat("null")) {
      return null;
    }
    if (eat("true")) {
      return Boolean.TRUE;
    }
    if (eat("false")) {
      return Boolean.FALSE;
    }
    int start = i;
    while (i < s.length() && "-+.eE0123456789".indexOf(s.charAt(i)) >= 0) {
      i++;
    }
    return Double.parseDouble(s.substring(start, i));
  }

  private void expect(String lit) {
    if (!eat(lit)) {
      throw new IllegalArgumentException("expected " + lit + " at " + i);
    }
  }

  private String string() {
    expect("\"");
    StringBuilder b = new StringBuilder();
    for (; ; ) {
      char c = s.charAt(i++);
      if (c == '"') {
        return b.toString();
      }
      if (c != '\\') {
        b.append(c);
        continue;
      }
      char e = s.charAt(i++);
      switch (e) {
        case 'b' -> b.append('\b');
        case 'f' -> b.append('\f');
        case 'n' -> b.append('\n');
        case 'r' -> b.append('\r');
        case 't' -> b.append('\t');
        case 'u' -> {
          b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
          i += 4;
        }
        default -> b.append(e);
      }
    }
  }
}
